"""Symbolic sizes in the IR: the program's symbols and where they are, and the trip-count
guards placed for them (design notes 32 and 49). The module's record is the declared
planning attribute `spyre_plan.SYMBOLS` (`record_symbols`, `symbolic_signature`).

A program exported with `torch.export.Dim` is compiled once at its symbols' upper bounds.
The frontend records that on the module, and every pass that depends on it reads it there:

    module attributes {spyre.symbols = {symbols = [["x.dim1", 2 : i64, 48 : i64]],
                                        inputs = [{"1" = "x.dim1"}], outputs = [{"1" = "x.dim1"}]}}

A program whose host makes key masks (note 81) also has `made = ["", "x.dim1"]`: per
program input, the symbol whose mask the host makes for it, or "" for a user's input.
`symbols` lists each symbol's name (`<input>.dim<k>` of its first use) and inclusive bounds,
in the order of the signature; `inputs` and `outputs` give, per program input (the graph
function's arguments) and per program output (its results after the updated buffers), the
symbolic dims and their symbols. spyre-place-guards records on each `spyrecode.program`
the guards it placed, one entry per `loop.begin` whose trips the host sets per call:

    spyrecode.program "k0" attributes {spyre.guards = [{core = 0 : i64, pc = 4 : i64,
                                       symbol = "x.dim1", thresholds = array<i64: 17>}]} ...

The loop at `pc` of `core`'s program runs as many trips as `thresholds` has entries at most
the symbol's value (`spyrec.target.container.Patch`). `SymbolicSignature` encodes the first,
`record_guards` / `guards_of` read and write the second.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    StringAttr,
    i64,
)
from xdsl.ir import Operation

GUARDS = "spyre.guards"


@dataclass(frozen=True)
class SymbolicSignature:
    """The symbols of a program and the symbolic dims of its inputs and outputs."""

    symbols: dict[str, tuple[int, int]]  # name -> (lower, upper), inclusive
    inputs: tuple[dict[int, str], ...]  # per program input: dim -> symbol
    outputs: tuple[dict[int, str], ...]  # per program output: dim -> symbol
    # per program input, "" or the symbol whose key mask the host makes for it (note 81);
    # empty when the host makes none
    made: tuple[str, ...] = ()

    def to_attr(self) -> DictionaryAttr:
        def dims(per_value: tuple[dict[int, str], ...]) -> ArrayAttr:
            return ArrayAttr([DictionaryAttr({str(d): StringAttr(s) for d, s in sorted(v.items())})
                              for v in per_value])

        made = {"made": ArrayAttr([StringAttr(s) for s in self.made])} if self.made else {}
        return DictionaryAttr({
            "symbols": ArrayAttr([ArrayAttr([StringAttr(name), IntegerAttr(lo, i64),
                                             IntegerAttr(hi, i64)])
                                  for name, (lo, hi) in self.symbols.items()]),
            "inputs": dims(self.inputs), "outputs": dims(self.outputs), **made})

    @staticmethod
    def from_attr(attr: DictionaryAttr) -> SymbolicSignature:
        def dims(name: str) -> tuple[dict[int, str], ...]:
            return tuple({int(d): s.data for d, s in v.data.items()}
                         for v in attr.data[name].data)  # type: ignore[attr-defined]

        symbols = {}
        for entry in attr.data["symbols"].data:  # type: ignore[attr-defined]
            name, lower, upper = entry.data
            symbols[name.data] = (lower.value.data, upper.value.data)
        made = attr.data.get("made")
        return SymbolicSignature(symbols, dims("inputs"), dims("outputs"), tuple(
            s.data for s in made.data) if made is not None else ())  # type: ignore[attr-defined]


Guard = tuple[int, int, str, tuple[int, ...]]  # core, pc of the loop.begin, symbol, thresholds


def record_guards(program: Operation, guards: list[Guard]) -> None:
    """Record on a `spyrecode.program` the guards placed in its cores' programs."""
    program.attributes[GUARDS] = ArrayAttr([DictionaryAttr({
        "core": IntegerAttr(core, i64), "pc": IntegerAttr(pc, i64), "symbol": StringAttr(symbol),
        "thresholds": DenseArrayBase.from_list(i64, list(thresholds))})
        for core, pc, symbol, thresholds in guards])


def guards_of(program: Operation) -> list[Guard]:
    """The guards recorded on a `spyrecode.program` (none when it has no record)."""
    attr = program.attributes.get(GUARDS)
    if not isinstance(attr, ArrayAttr):
        return []
    out = []
    for entry in attr.data:
        data = entry.data
        out.append((data["core"].value.data, data["pc"].value.data, data["symbol"].data,
                    tuple(int(t) for t in data["thresholds"].get_values())))
    return out
