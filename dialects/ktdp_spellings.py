"""Older generic spellings of an op's properties, read into the current ones.

docs/ktir.md §1: spyrec parses every spelling KTIR has used and prints the current one. The
custom form's parsers handle their own old spellings; the generic form is built by xDSL's
parser straight from the property dictionary (`IRDLOperation.create`), so an op whose
properties changed derives from `UpgradesProperties` and says in `upgrade_properties` how an
older dictionary maps to the current one. Verification then sees only current properties.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Self

from xdsl.dialects.builtin import LocationAttr
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import IRDLOperation


class UpgradesProperties(IRDLOperation):
    """An op whose generic form reads older property spellings (see the module docstring)."""

    @classmethod
    def upgrade_properties(
        cls, properties: Mapping[str, Attribute], operands: Sequence[SSAValue]
    ) -> Mapping[str, Attribute]:
        """The current properties for `properties` as written (unchanged if current)."""
        return properties

    @classmethod
    def create(
        cls,
        *,
        operands: Sequence[SSAValue] = (),
        result_types: Sequence[Attribute] = (),
        properties: Mapping[str, Attribute] = {},
        attributes: Mapping[str, Attribute] = {},
        location: LocationAttr | None = None,
        successors: Sequence[Block] = (),
        regions: Sequence[Region] = (),
    ) -> Self:
        return super().create(
            operands=operands, result_types=result_types,
            properties=cls.upgrade_properties(properties, operands), attributes=attributes,
            location=location, successors=successors, regions=regions,
        )
