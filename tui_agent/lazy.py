"""A result dict whose costly values are made when first read (a send's receipt of a burst).

``send_notification_signal`` and ``send_state_signal`` return a dict with pydantic objects in
it (the record or lane, the Signal, the decision): most callers of a burst read only
``accepted``, and building the others was most of what such a send cost in Python. A
:class:`LazyDict` holds a :class:`Later` in their place and makes each the first time it is
read, by any way a dict is read (``d[k]``, ``get``, ``items``, ``values``, ``dict(d)``,
``{**d}``, ``==``, ``repr``, ``json.dumps``, ``copy``, pickling, a ``match`` mapping pattern),
then keeps it: a reader never sees a ``Later``. tests/test_lazy_dict.py checks each.
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, ValuesView
from typing import Any


class Later:
    """A value to be made by ``make()`` when first read from a :class:`LazyDict`."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


_MISSING: Any = object()


class LazyDict(dict[str, Any]):
    """A dict whose :class:`Later` values are made on first read (see the module)."""

    __slots__ = ()

    def _made(self, key: str, value: Any) -> Any:
        if type(value) is Later:
            value = value.make()
            dict.__setitem__(self, key, value)
        return value

    def make_all(self) -> None:
        """Make every value not made yet."""
        for key, value in dict.items(self):
            if type(value) is Later:
                dict.__setitem__(self, key, value.make())  # a value replaced: no resize

    def __getitem__(self, key: str) -> Any:
        return self._made(key, dict.__getitem__(self, key))

    def get(self, key: str, default: Any = None) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride]
        value = dict.get(self, key, _MISSING)
        return default if value is _MISSING else self._made(key, value)

    # Not dict's own iterator: so CPython's dict(d), {**d} and update(d) read values through
    # __getitem__ (they copy a dict's storage directly only when its type iterates as dict).
    def __iter__(self) -> Iterator[str]:
        return dict.__iter__(self)

    def items(self) -> ItemsView[str, Any]:  # pyright: ignore[reportIncompatibleMethodOverride]
        self.make_all()
        return dict.items(self)

    def values(self) -> ValuesView[Any]:  # pyright: ignore[reportIncompatibleMethodOverride]
        self.make_all()
        return dict.values(self)

    def pop(self, key: str, default: Any = _MISSING) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride]
        if key not in self:
            if default is _MISSING:
                raise KeyError(key)
            return default
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple[str, Any]:
        key, value = dict.popitem(self)
        return key, (value.make() if type(value) is Later else value)

    def setdefault(self, key: str, default: Any = None) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride]
        if key in self:
            return self[key]
        dict.__setitem__(self, key, default)
        return default

    def copy(self) -> dict[str, Any]:
        self.make_all()
        return dict.copy(self)

    def __eq__(self, other: object) -> bool:
        self.make_all()
        if isinstance(other, LazyDict):
            other.make_all()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]  (as dict's)

    def __repr__(self) -> str:
        self.make_all()
        return dict.__repr__(self)

    def __or__(self, other: Any) -> dict[str, Any]:  # pyright: ignore[reportIncompatibleMethodOverride]
        return self.copy() | other

    def __ror__(self, other: Any) -> dict[str, Any]:  # pyright: ignore[reportIncompatibleMethodOverride]
        return other | self.copy()

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.copy(),))  # copied or pickled: a plain dict of the made values

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return self.__reduce__()
