"""What KTIR's memories, memory views and access tiles mean: the values the KTIR interpreter
runs on, and the view, grid and group rules the compiler's bounds check
(`passes/ktir/ktir_bounds.py`) and the scheduler's per-core walk
(`passes/spyrecode/core_walk.py`) read, so all of them stand on one definition.

- `Memory`: a flat, byte-addressed store. `Lpddr` is the card's off-chip memory (arrays are
  placed into it by the caller); each core has an `Lx` scratchpad of fixed capacity.
- `Strided`: the address rule of a memory view. Element (c0, c1, ...) of the global
  coordinate space lives at `offset + sum((c - origin) * stride)` elements into its memory,
  where `origin` is the smallest point of the view's coordinate set (`view_origin`). Plain
  arithmetic, so the scheduler applies it to symbolic addresses too.
- `MemView`: what `ktdp.construct_memory_view` builds: a `Strided` in a memory, checked. A
  coordinate outside the set or outside the view's sizes is an error, never a zero.
- `DistributedView`: the union of several views; a coordinate goes to the first part whose
  coordinate set holds it.
- `AccessTile`: the coordinates an access tile selects, in tile order, plus the view they
  index. Indirect tiles read their index views when the tile is loaded or stored, not when
  it is built.
- Grids: core `c` of a grid is at `core_coords(c, grid)` (the first dim fastest),
  `linear_core` inverts it; an inter-tile future's groups are `tile_groups`, the tiles a
  set names for a group `group_tiles`.

Every access check raises `KtirAccessError`, which the interpreter completes with the core
and the op.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
)
from xdsl.ir import Attribute
from xdsl.ir.affine import AffineExpr, AffineMap, AffineSet

from spyrec.dialects.ktdp_affine import bind_symbols, box_bounds, is_box, points_1d, set_contains
from spyrec.target.layout import STICK_BYTES


class KtirError(Exception):
    """A kernel did something KTIR does not allow at run time (bad access, overflow, deadlock)."""


class KtirAccessError(KtirError):
    """An access outside a view, its coordinate set, or its memory."""


class LazyText:
    """Text built only when shown (error messages name values by their printed names,
    which costs a print of the function; runs that do not fail never pay it)."""

    def __init__(self, build: Callable[[], str]):
        self._build = build

    def __str__(self) -> str:
        return self._build()

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


Description = str | LazyText


def numpy_dtype(element: Attribute) -> np.dtype[Any]:
    """The NumPy dtype that holds values of the scalar type `element`."""
    match element:
        case Float16Type():
            return np.dtype(np.float16)
        case Float32Type():
            return np.dtype(np.float32)
        case Float64Type():
            return np.dtype(np.float64)
        case BFloat16Type():
            return np.dtype(ml_dtypes.bfloat16)
        case IndexType():
            return np.dtype(np.int64)
        case IntegerType():
            width = element.width.data
            if width == 1:
                return np.dtype(np.bool_)
            if width in (8, 16, 32, 64):
                unsigned = element.signedness.data.name == "UNSIGNED"
                return np.dtype(f"{'u' if unsigned else ''}int{width}")
    if isinstance(element, AnyFloat):
        raise KtirError(f"floating-point type {element} is not supported by the interpreter")
    raise KtirError(f"type {element} has no NumPy equivalent")


@dataclass
class Memory:
    """A flat byte-addressed memory; `data` is its whole content."""

    name: str
    data: np.ndarray
    _typed: dict[np.dtype[Any], np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def size(self) -> int:
        return int(self.data.size)

    def typed(self, dtype: np.dtype[Any]) -> np.ndarray:
        """The memory reinterpreted as elements of `dtype` (a view, not a copy)."""
        if dtype not in self._typed:
            usable = self.size - self.size % dtype.itemsize
            self._typed[dtype] = self.data[:usable].view(dtype)
        return self._typed[dtype]

    def _reset_views(self) -> None:
        self._typed.clear()


@dataclass(frozen=True)
class PlacedArray:
    """An array placed in LPDDR: bytes [start, end), and how errors name it."""

    start: int
    end: int
    name: str


class Lpddr(Memory):
    """Off-chip memory. It holds exactly what was placed into it; the rest does not exist.

    It remembers where each array was placed, so that an access through a view that starts
    in one array and runs into the next is an error, not a read of the other array's bytes.
    """

    def __init__(self) -> None:
        super().__init__("LPDDR", np.zeros(0, dtype=np.uint8))
        self.arrays: list[PlacedArray] = []  # by address

    def place(self, array: np.ndarray, align: int = STICK_BYTES, name: str | None = None) -> int:
        """Copy `array` in at the next `align`-byte boundary; return its byte address.
        Errors call it `name` (default: the array at its address), with shape and dtype."""
        address = -(-self.size // align) * align
        raw = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        end = address + raw.size
        shape = "x".join(map(str, array.shape)) or "0-d"
        label = name or f"the array at byte {address}"
        self.arrays.append(PlacedArray(address, end, f"{label} ({shape} {array.dtype})"))
        padded_end = -(-end // align) * align
        grown = np.zeros(padded_end, dtype=np.uint8)
        grown[: self.size] = self.data
        grown[address:end] = raw
        self.data = grown
        self._reset_views()
        return address

    def array_at(self, address: int) -> PlacedArray | None:
        """The placed array holding byte `address`, if any."""
        index = bisect.bisect_right([a.start for a in self.arrays], address) - 1
        if index >= 0 and address < self.arrays[index].end:
            return self.arrays[index]
        return None

    def read(self, address: int, shape: Sequence[int], dtype: np.dtype[Any] | type) -> np.ndarray:
        """A copy of the array of `shape` and `dtype` stored at byte `address`."""
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        raw = self.data[address : address + count * dtype.itemsize]
        return raw.copy().view(dtype).reshape(shape)


class Lx(Memory):
    """One core's on-chip scratchpad (`#ktdp.memory_space<ct_local, ct_id = core>`)."""

    def __init__(self, core: int, capacity: int):
        super().__init__(f"LX of core {core}", np.zeros(capacity, dtype=np.uint8))
        self.core = core


def coordinate_str(point: Sequence[int]) -> str:
    return "(" + ", ".join(str(int(c)) for c in point) + ")"


def lower_bounds(affine_set: AffineSet) -> list[int]:
    """Per dim, the lower bound the set's single-dim constraints give (0 if none).

    For the box-shaped coordinate sets KTIR uses this is the set's minimum point, the
    origin of a view's local coordinates.
    """
    bounds = box_bounds(affine_set, ignore_coupled=True) or []
    return [0 if low is None else low for low, _ in bounds]


def core_coords(core: int, grid: Sequence[int]) -> tuple[int, ...]:
    """The grid coordinates of linear core id `core` (the first grid dim varies fastest)."""
    coords = []
    for extent in grid:
        coords.append(core % extent)
        core //= extent
    return tuple(coords)


def linear_core(coords: Sequence[int], grid: Sequence[int]) -> int:
    """The linear core id of grid coordinates `coords`: the inverse of `core_coords`."""
    core, scale = 0, 1
    for coord, extent in zip(coords, grid, strict=True):
        core += coord * scale
        scale *= extent
    return core


def tile_groups(groups: AffineSet) -> list[int]:
    """The groups of an inter-tile future (the points of its one-dim group set), ascending."""
    points = points_1d(groups, [], 1 << 20)
    if points is None:
        raise KtirError(f"the group set {groups} is unbounded")
    return points


def group_tiles(tile_set: AffineSet, group: int, num_tiles: int, role: str) -> list[int]:
    """The tiles (linear core ids) that `tile_set` names for `group`, ascending; every one
    must be on the grid of `num_tiles` tiles (`role` names them in the error)."""
    tiles = points_1d(tile_set, [group], 1 << 20)
    if tiles is None:
        tiles = [t for t in range(num_tiles) if set_contains(tile_set, [t], [group])]
    outside = [t for t in tiles if not 0 <= t < num_tiles]
    if outside:
        raise KtirError(
            f"{role} tiles {outside} of group {group} are not on the grid of {num_tiles} tiles"
        )
    return tiles


def set_bounds(affine_set: AffineSet) -> list[tuple[int, int]] | None:
    """Per-dim inclusive (low, high) of the set's bounding box; None if a dim is unbounded."""
    bounds = box_bounds(affine_set, ignore_coupled=True)
    if bounds is None or any(low is None or high is None for low, high in bounds):
        return None
    return [(cast(int, low), cast(int, high)) for low, high in bounds]


def eval_exprs(
    exprs: Sequence[AffineExpr], dims: Sequence[Any], symbols: Sequence[int] = ()
) -> list[Any]:
    """Evaluate affine expressions on ints or NumPy arrays (floordiv and mod round down)."""
    return [expr.eval(dims, symbols) for expr in exprs]


def indirect_subscript(
    subscript: AffineMap, captured: Sequence[Any], variables: Sequence[Any]
) -> tuple[Any, ...]:
    """One per-dim subscript of an indirect access tile at a point of its variables space:
    the map's dims are the captured variables, then the variables (ints or NumPy arrays)."""
    return subscript.eval([*captured, *variables], [])


@dataclass
class TilePoints:
    """The points of a tile's set in tile order, relative to the tile's base.

    `points` has shape `tile_shape + (rank,)`; `present` marks which tile positions some set
    point maps to (all of them for a box with a permutation order).
    """

    points: np.ndarray
    present: np.ndarray | None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.points.shape[:-1])


def enumerate_tile(
    tile_set: AffineSet, order: AffineMap, symbols: Sequence[int], what: Description
) -> TilePoints:
    """Enumerate `tile_set` (symbols bound) and lay its points out by `order`.

    The tile index of point p is order(p) - min over the set of order(p); the tile's shape is
    the extent of order(p) per result (so a (d1, d0) order over a 16x32 set gives 32x16).
    """
    bound = bind_symbols(tile_set, symbols)
    bounds = set_bounds(bound)
    if bounds is None:
        raise KtirError(f"{what} is unbounded: {tile_set}")
    extents = [max(0, high - low + 1) for low, high in bounds]
    rank = bound.num_dims
    if rank == 0:
        return TilePoints(np.zeros((0,), dtype=np.int64), None)
    total = int(np.prod(extents, dtype=np.int64))
    if total > 1 << 27:
        raise KtirError(f"{what} has {total} points; the interpreter enumerates at most 2**27")
    grid = np.indices(extents, dtype=np.int64).reshape(rank, -1)
    grid += np.array([low for low, _ in bounds], dtype=np.int64).reshape(rank, 1)
    if not is_box(bound):
        keep = np.broadcast_to(set_contains(bound, list(grid)), grid.shape[1:])
        grid = grid[:, keep]
    identity = order.num_dims == rank and all(
        r == AffineExpr.dimension(i) for i, r in enumerate(order.results)
    )
    if identity and grid.shape[1] == total:
        return TilePoints(grid.T.reshape(*extents, rank).copy(), None)
    ordered = (
        np.stack(
            [
                np.broadcast_to(np.asarray(v, dtype=np.int64), grid.shape[1:])
                for v in eval_exprs(order.results, list(grid))
            ]
        )
        if order.results
        else np.zeros((0, grid.shape[1]), dtype=np.int64)
    )
    if grid.shape[1] == 0:
        shape = tuple(0 for _ in order.results)
        return TilePoints(np.zeros((*shape, rank), dtype=np.int64), None)
    low = ordered.min(axis=1, keepdims=True)
    index = ordered - low
    shape = tuple(int(e) + 1 for e in index.max(axis=1))
    points = np.zeros((*shape, rank), dtype=np.int64)
    points[tuple(index)] = grid.T
    present = None
    if int(np.prod(shape, dtype=np.int64)) != grid.shape[1]:
        present = np.zeros(shape, dtype=bool)
        present[tuple(index)] = True
    return TilePoints(points, present)


class View:
    """Something an access tile can index: a memory view, a distributed view or a tensor."""

    dtype: np.dtype[Any]
    rank: int
    description: Description

    def read(self, coords: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def write(self, coords: np.ndarray, values: np.ndarray) -> None:
        raise NotImplementedError

    def contains(self, coords: np.ndarray) -> np.ndarray:
        """Which rows of `coords` (N x rank) the view has: the lanes a masked tile keeps."""
        raise NotImplementedError

    def traffic(self, coords: np.ndarray) -> list[tuple[Memory, np.ndarray]]:
        """(memory, first-byte addresses of the elements) that accessing `coords` touches."""
        raise NotImplementedError


@dataclass
class Strided:
    """Where a memory view keeps its elements: the address rule of construct_memory_view.

    The element at global coordinate c lies at byte `base + sum((c - origin) * stride) *
    itemsize`, where `origin` is the lowest point of the view's coordinate set (`view_origin`)
    and the strides are in elements. The rule is plain arithmetic and checks nothing, so the
    interpreter applies it to arrays of coordinates (`MemView`, which adds the checks) and the
    scheduler to ints or, while it builds a template, to exact affine forms of the kernel's
    address arguments and the core's coordinates.
    """

    base: Any  # bytes: the address of the element at `origin`
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # elements
    itemsize: int
    origin: tuple[int, ...]

    def local_address(self, local: Sequence[Any]) -> Any:
        """Byte address of the element `local` (per dim, counted from `origin`)."""
        offset = sum(c * s for c, s in zip(local, self.strides, strict=True))
        return self.base + offset * self.itemsize

    def address(self, point: Sequence[Any]) -> Any:
        """Byte address of the element at global coordinate `point`."""
        return self.local_address([c - o for c, o in zip(point, self.origin, strict=True)])


def view_origin(coordinate_set: AffineSet) -> tuple[int, ...]:
    """The origin of a view's local coordinates: the lowest point of its coordinate set (per
    dim, 0 where no bound without symbols is known)."""
    return tuple(lower_bounds(coordinate_set))


@dataclass(kw_only=True)
class MemView(Strided, View):
    """A strided view of memory with a coordinate set (the value of construct_memory_view):
    the `Strided` address rule, checked against the set, the sizes and the memory."""

    memory: Memory
    dtype: np.dtype[Any]
    coordinate_set: AffineSet
    bound_set: AffineSet  # the coordinate set with the view's symbols bound
    description: Description
    home: PlacedArray | None = None  # the array of the pointer parameter it is built on

    def __post_init__(self) -> None:
        self.rank = len(self.shape)
        self._origin = np.asarray(self.origin, dtype=np.int64)

    def contains(self, coords: np.ndarray) -> np.ndarray:
        """Which rows of `coords` (N x rank, global) fall in the coordinate set and sizes."""
        inside = np.broadcast_to(
            np.asarray(set_contains(self.bound_set, list(coords.T)), dtype=bool),
            coords.shape[:1],
        )
        local = coords - self._origin
        return inside & np.all((local >= 0) & (local < np.asarray(self.shape)), axis=1)

    def footprint(self) -> tuple[int, int]:
        """[first, last] byte this view can reach (for capacity checks)."""
        itemsize = self.dtype.itemsize
        low = high = 0
        for size, stride in zip(self.shape, self.strides, strict=True):
            if size <= 0:
                return self.base, self.base - 1
            reach = (size - 1) * stride
            low, high = low + min(0, reach), high + max(0, reach)
        return self.base + low * itemsize, self.base + high * itemsize + itemsize - 1

    def addresses(self, coords: np.ndarray) -> np.ndarray:
        """Byte addresses of `coords` (N x rank), after checking set, sizes and memory."""
        if coords.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        inside = np.broadcast_to(
            np.asarray(set_contains(self.bound_set, list(coords.T)), dtype=bool),
            coords.shape[:1],
        )
        if not inside.all():
            bad = coords[int(np.argmin(inside))]
            raise KtirAccessError(
                f"coordinate {coordinate_str(bad)} is outside the coordinate set of "
                f"{self.description} ({self.coordinate_set})"
            )
        local = coords - self._origin
        within = np.all((local >= 0) & (local < np.asarray(self.shape)), axis=1)
        if not within.all():
            position = int(np.argmin(within))
            raise KtirAccessError(
                f"coordinate {coordinate_str(coords[position])} (local "
                f"{coordinate_str(local[position])}) is outside {self.description} of shape "
                f"{'x'.join(map(str, self.shape))}"
            )
        address = np.broadcast_to(
            np.asarray(self.local_address(list(local.T)), dtype=np.int64), local.shape[:1]
        )
        low, high = int(address.min()), int(address.max()) + self.dtype.itemsize
        if low < 0 or high > self.memory.size:
            position = (
                int(np.argmax(address)) if high > self.memory.size else int(np.argmin(address))
            )
            raise KtirAccessError(
                f"coordinate {coordinate_str(coords[position])} of {self.description} is at byte "
                f"{int(address[position])}, outside {self.memory.name} "
                f"({self.memory.size} bytes)"
            )
        if isinstance(self.memory, Lpddr):
            self._check_within_array(self.memory, coords, address, low, high)
        return address

    def _check_within_array(
        self, memory: Lpddr, coords: np.ndarray, address: np.ndarray, low: int, high: int
    ) -> None:
        """Every byte of the access lies in the view's array: the one passed for the pointer
        parameter it is built on, else the one its first element is in. A view never reads
        or writes another array's bytes, nor the padding between arrays."""
        home = self.home or memory.array_at(self.base)
        if home is None:
            raise KtirAccessError(
                f"{self.description} starts at byte {self.base} of LPDDR, which is in no array "
                "placed there"
            )
        if low >= home.start and high <= home.end:
            return
        outside = (address < home.start) | (address + self.dtype.itemsize > home.end)
        position = int(np.argmax(outside))  # the first one in tile order
        byte = int(address[position])
        other = memory.array_at(byte)
        into = f", in {other.name}" if other is not None else ""
        raise KtirAccessError(
            f"coordinate {coordinate_str(coords[position])} of {self.description} is at byte "
            f"{byte}{into}, outside {home.name}, bytes [{home.start}, {home.end}), the array "
            f"the view {'is built on' if self.home else 'starts in'}: the view reaches past "
            "the array passed for it"
        )

    def _element_index(self, address: np.ndarray) -> np.ndarray:
        if self.base % self.dtype.itemsize:
            raise KtirAccessError(
                f"{self.description} starts at byte {self.base}, which is not a multiple of "
                f"its element size {self.dtype.itemsize}"
            )
        return address // self.dtype.itemsize

    def read(self, coords: np.ndarray) -> np.ndarray:
        return self.memory.typed(self.dtype)[self._element_index(self.addresses(coords))]

    def write(self, coords: np.ndarray, values: np.ndarray) -> None:
        index = self._element_index(self.addresses(coords))
        self.memory.typed(self.dtype)[index] = values

    def traffic(self, coords: np.ndarray) -> list[tuple[Memory, np.ndarray]]:
        return [(self.memory, self.addresses(coords))]


@dataclass
class DistributedView(View):
    """The union of several views (construct_distributed_memory_view)."""

    parts: list[MemView]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    description: Description

    def __post_init__(self) -> None:
        self.rank = len(self.shape)

    def _owner(self, coords: np.ndarray) -> np.ndarray:
        owner = np.full(coords.shape[0], -1, dtype=np.int64)
        for index, part in enumerate(self.parts):
            owner[(owner < 0) & part.contains(coords)] = index
        if (owner < 0).any():
            bad = coords[int(np.argmin(owner))]
            raise KtirAccessError(
                f"coordinate {coordinate_str(bad)} is in no part of {self.description}"
            )
        return owner

    def contains(self, coords: np.ndarray) -> np.ndarray:
        inside = np.zeros(coords.shape[0], dtype=bool)
        for part in self.parts:
            inside |= part.contains(coords)
        return inside

    def read(self, coords: np.ndarray) -> np.ndarray:
        owner = self._owner(coords)
        values = np.zeros(coords.shape[0], dtype=self.dtype)
        for index, part in enumerate(self.parts):
            mask = owner == index
            if mask.any():
                values[mask] = part.read(coords[mask])
        return values

    def write(self, coords: np.ndarray, values: np.ndarray) -> None:
        owner = self._owner(coords)
        for index, part in enumerate(self.parts):
            mask = owner == index
            if mask.any():
                part.write(coords[mask], values[mask])

    def traffic(self, coords: np.ndarray) -> list[tuple[Memory, np.ndarray]]:
        owner = self._owner(coords)
        return [
            (part.memory, part.addresses(coords[owner == index]))
            for index, part in enumerate(self.parts)
            if (owner == index).any()
        ]


@dataclass
class TensorView(View):
    """A tensor used as the base of an access tile (reads only; tensors are values)."""

    array: np.ndarray
    description: Description

    def __post_init__(self) -> None:
        self.dtype = self.array.dtype
        self.rank = self.array.ndim

    def contains(self, coords: np.ndarray) -> np.ndarray:
        return np.all((coords >= 0) & (coords < np.asarray(self.array.shape)), axis=1)

    def read(self, coords: np.ndarray) -> np.ndarray:
        within = self.contains(coords)
        if not within.all():
            bad = coords[int(np.argmin(within))]
            raise KtirAccessError(
                f"coordinate {coordinate_str(bad)} is outside {self.description} of shape "
                f"{'x'.join(map(str, self.array.shape))}"
            )
        return self.array[tuple(coords.T)]

    def write(self, coords: np.ndarray, values: np.ndarray) -> None:
        raise KtirError(f"cannot store into {self.description}: tensors are values")

    def traffic(self, coords: np.ndarray) -> list[tuple[Memory, np.ndarray]]:
        return []


# The masked-tails extension (docs/ktir.md, "Masked tails"): a unit attribute on
# `ktdp.construct_access_tile` masks that tile; on a kernel's `func.func`, every direct tile
# of the kernel. A masked tile's lanes whose coordinate lies outside its view are not read
# (a load gives 0 there) and not written; an unmasked tile's are an error.
MASKED_TILE = "ktdp.masked"
MASKED_KERNEL = "ktdp.masked_tails"
# on an access tile the compiler rewrote to a tensor stored in blocks of the tile's width
# (spyrec/frontend/ktir_blocks.py): the width, for the bounds proof's message
COLUMN_BLOCK = "spyre.column_block"


@dataclass
class AccessTile:
    """The value of an access tile: a view and how to get its coordinates in tile order."""

    view: View
    shape: tuple[int, ...]
    coordinates: Callable[[], np.ndarray]  # shape + (rank,), global coordinates
    present: np.ndarray | None
    description: Description
    index_reads: Callable[[], list[tuple[Memory, np.ndarray, int]]] = list
    masked: bool = False  # lanes outside the view are dropped (MASKED_TILE)

    def flat_coordinates(self) -> np.ndarray:
        coords = self.coordinates()
        flat = coords.reshape(-1, coords.shape[-1]) if coords.ndim else coords
        if self.present is not None:
            flat = flat[self.present.reshape(-1)]
        return flat

    def lanes(self) -> tuple[np.ndarray, np.ndarray | None]:
        """The coordinates an access touches, in tile order, and which tile positions they
        are (None: every position). Holes of a non-box set are never touched; for a masked
        tile neither are the lanes whose coordinate the view does not have."""
        flat = self.flat_coordinates()
        if not self.masked:
            return flat, self.present
        keep = self.view.contains(flat)
        if keep.all():
            return flat, self.present
        lanes = np.ones(self.shape, dtype=bool) if self.present is None else self.present.copy()
        lanes[lanes] = keep
        return flat[keep], lanes


@dataclass(frozen=True)
class Undefined:
    """A value KTIR leaves undefined, e.g. a delivery result on a tile that does not consume."""

    reason: str


def view_reach(sizes: list[int], strides: list[int]) -> tuple[int, int]:
    """The lowest and highest element offset, from the view's offset, a view can address
    ((0, -1) for a view of no element)."""
    low = high = 0
    for size, stride in zip(sizes, strides, strict=True):
        if size <= 0:
            return 0, -1
        low += min(0, (size - 1) * stride)
        high += max(0, (size - 1) * stride)
    return low, high
