"""spyre-opt: xDSL's opt driver with every spyrec dialect and pass registered.

A thin subclass of `xDSLOptMain`; it must not import torch (startup time), so it reads only
the registry, which imports dialects and passes lazily.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from xdsl.dialects import get_all_dialects
from xdsl.transforms import get_all_passes
from xdsl.xdsl_opt_main import xDSLOptMain

from spyrec.diagnostics import SpyrecError
from spyrec.registry import DIALECTS, PASSES


class SpyreOptMain(xDSLOptMain):
    """xDSL opt main over xDSL's own dialects and passes plus spyrec's registry."""

    def register_all_dialects(self) -> None:
        loaders = dict(get_all_dialects())
        loaders.update(DIALECTS)  # spyrec's definitions win over any stock one of the same name
        for name, loader in loaders.items():
            self.ctx.register_dialect(name, loader)

    def register_all_passes(self) -> None:
        for name, loader in {**get_all_passes(), **PASSES}.items():
            self.register_pass(name, loader)


def main(args: Sequence[str] | None = None) -> None:
    try:
        SpyreOptMain(description="spyrec modular optimizer driver", args=args).run()
    except SpyrecError as exc:
        # a user-facing failure of a spyrec pass: its message, no traceback
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
