"""Which ring and sync instructions of a kernel's programs meet: the rendezvous groups.

A ring or sync instruction takes part in a *group* of instructions on several cores; the
groups are fixed by the programs alone, independent of timing:

* the k-th `ring.send` of core a to core b with tag t pairs with the k-th `ring.recv` of
  core b from core a with tag t;
* the k-th `ring.reduce` (or `sync.barrier`) of a core with a given group and tag (and, for
  reductions, root) joins the k-th one of every other member of that group.

The emulator groups a kernel's instructions with `match` when it loads it (`runtime/ring.py`
runs them); spyre-place-guards groups them the same way to give a group's members one need.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spyrec.target.isa import Instr, group_members

RENDEZVOUS_OPS = frozenset({"ring.send", "ring.recv", "ring.reduce", "sync.barrier"})


@dataclass
class Rendezvous:
    """The groups of a kernel's ring and sync instructions.

    `group[core][pc]` is the group id of instruction pc of core; `members[g]` are the
    (core, pc) found for group g, `expected[g]` how many it needs, `keys[g]` what matches.
    """

    group: dict[int, dict[int, int]] = field(default_factory=dict)
    members: list[list[tuple[int, int]]] = field(default_factory=list)
    expected: list[int] = field(default_factory=list)
    keys: list[tuple[int, ...]] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)

    def missing(self, gid: int, programs: dict[int, list[Instr]]) -> list[str]:
        """What group gid still lacks, in words (for deadlock reports)."""
        op, key, present = self.ops[gid], self.keys[gid], {c for c, _ in self.members[gid]}
        if op in ("ring.send", "ring.recv"):
            sender, receiver, tag = key
            if sender not in present:
                return [(f"a ring.send from core {sender} to core {receiver} with tag {tag}, "
                         f"which core {sender}'s program does not have")]
            return [(f"a ring.recv on core {receiver} from core {sender} with tag {tag}, which "
                     f"core {receiver}'s program does not have")]
        return [f"core {c}'s matching {op}, which its program does not have"
                for c in group_members(*key[:3]) if c not in present]


def _key(instr: Instr, core: int) -> tuple[int, ...]:
    a = instr.named_args()
    if instr.op == "ring.send":
        return (core, a["dst_core"], a["tag"])
    if instr.op == "ring.recv":
        return (a["src_core"], core, a["tag"])
    if instr.op == "ring.reduce":
        return (a["first"], a["count"], a["stride"], a["tag"], a["root"])
    return (a["first"], a["count"], a["stride"], a["tag"])


def match(programs: dict[int, list[Instr]]) -> Rendezvous:
    """Group the ring and sync instructions of a kernel's (validated) programs."""
    found = Rendezvous()
    ids: dict[tuple[object, ...], int] = {}
    for core in sorted(programs):
        seen: dict[tuple[object, ...], int] = {}
        per_pc: dict[int, int] = {}
        for pc, instr in enumerate(programs[core]):
            if instr.op not in RENDEZVOUS_OPS:
                continue
            kind = "p2p" if instr.op in ("ring.send", "ring.recv") else instr.op
            key = _key(instr, core)
            side = (kind, key, instr.op if kind == "p2p" else "")
            occurrence = seen.get(side, 0)
            seen[side] = occurrence + 1
            gid = ids.get((kind, key, occurrence))
            if gid is None:
                gid = len(found.members)
                ids[(kind, key, occurrence)] = gid
                found.members.append([])
                found.expected.append(2 if kind == "p2p" else instr.arg("count"))
                found.keys.append(key)
                found.ops.append(instr.op)
            found.members[gid].append((core, pc))
            per_pc[pc] = gid
        found.group[core] = per_pc
    return found
