"""deadletter's WebAssembly component in Python: loaded by wasmtime (the PyPI package `wasmtime`,
its component API) and called as plain functions, ``core.validate.enqueue(...)``.

Values cross as wasmtime-py makes them: a WIT record is a ``wasmtime.component.Record`` whose
attributes carry the WIT names (``getattr(message, "retry-count")``, or :func:`get`), a variant
a ``Variant(tag, payload)``, an enum its case name, an option ``None`` or the value. A
``result`` comes back as its ``ok`` value; its ``error`` is raised as :class:`ComponentError`.
Nothing here knows a rule of the queue: see ``memory_store.py`` for a store over it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import wasmtime
from wasmtime import component as wc

#: The WIT package the component exports, without its version.
PACKAGE = "deadletter:queue"


class ComponentError(Exception):
    """An ``error`` of the component: ``code`` (``validation-failed``, ``not-found``,
    ``conflict``, ``store``) and, for ``validation-failed``, the rejected ``fields`` as
    ``(field, code, index)`` triples (``index``: the item of a batch, else ``None``)."""

    def __init__(self, error: wc.Record) -> None:
        super().__init__(error.message)
        self.code: str = error.code
        self.fields: list[tuple[str, str, int | None]] = [
            (f.field, f.code, f.index) for f in error.fields
        ]


def record(**fields: Any) -> wc.Record:
    """A WIT record from keyword arguments in Python's names (``max_retries`` for
    ``max-retries``)."""
    value = wc.Record()
    for name, field in fields.items():
        setattr(value, name.replace("_", "-"), field)
    return value


def get(value: wc.Record, name: str) -> Any:
    """A field of a WIT record by its Python name (``get(message, "retry_count")``)."""
    return getattr(value, name.replace("_", "-"))


def arg(value: Any) -> wc.Variant:
    """A Python value as the WIT ``arg`` the component judges, mapped without judging: ``None``
    is null, a ``bool`` a boolean (never an integer), an ``int`` an integer (``big-int`` beyond
    64 bits), a ``float`` a float, a ``str`` text, anything else ``other``."""
    if value is None:
        return wc.Variant("null")
    if isinstance(value, bool):
        return wc.Variant("boolean", value)
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return wc.Variant("int", value)
        return wc.Variant("big-int")
    if isinstance(value, float):
        return wc.Variant("float", value)
    if isinstance(value, str):
        return wc.Variant("text", value)
    return wc.Variant("other", f"a {type(value).__name__}")


class _Function:
    """One exported function: called with the store, its ``result`` unwrapped."""

    def __init__(self, store: wasmtime.Store, func: wc.Func) -> None:
        self._store = store
        self._func = func
        result = func.type(store).result
        self._result = isinstance(result, wc.ResultType)
        # wasmtime-py lifts a `result` as Variant("ok" | "err", payload) only when its two cases
        # lift to overlapping Python classes; otherwise as the bare payload. The error case is
        # always the record `error`, so an untagged result is an error exactly when it is a Record.
        classes: set[type] = set()
        if self._result:
            if result.ok is None:
                classes.add(object)
            else:
                result.ok.add_classes(classes)
        self._tagged = wc.Record in classes

    def __call__(self, *args: Any) -> Any:
        value = self._func(self._store, *args)
        if not self._result:
            return value
        if self._tagged:
            if value.tag == "err":
                raise ComponentError(value.payload)
            return value.payload
        if isinstance(value, wc.Record):
            raise ComponentError(value)
        return value


class _Interface:
    """The functions of one exported interface, by Python name (``replay_all`` for
    ``replay-all``)."""

    def __init__(self, core: Core, name: str) -> None:
        self._core = core
        self._index = core._export(name)
        self._functions: dict[str, _Function] = {}

    def function(self, wit_name: str) -> _Function:
        found = self._functions.get(wit_name)
        if found is None:
            index = self._core._instance.get_export_index(self._core.store, wit_name, self._index)
            func = index and self._core._instance.get_func(self._core.store, index)
            if not func:
                raise AttributeError(f"the component exports no function {wit_name!r}")
            found = self._functions[wit_name] = _Function(self._core.store, func)
        return found

    def __getattr__(self, name: str) -> _Function:
        return self.function(name.replace("_", "-"))


class Batches:
    """The resource ``plan.batches`` (the batches of a bulk operation), dropped on exit of a
    ``with`` block."""

    def __init__(self, plan: _Interface, limit: int) -> None:
        self._plan = plan
        self._handle = plan.function("[constructor]batches")(limit)

    def next(self) -> tuple[int, int] | None:
        return self._plan.function("[method]batches.next")(self._handle)

    def record(self, ids: list[int], applied: int) -> None:
        self._plan.function("[method]batches.record")(self._handle, ids, applied)

    def done(self) -> int:
        return self._plan.function("[method]batches.done")(self._handle)

    def __enter__(self) -> Batches:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._handle.drop(self._plan._core.store)


class Scan:
    """The resource ``plan.scan`` (the reads of one ``list``), consumed by :meth:`finish`, or
    dropped on exit of a ``with`` block that did not finish it."""

    def __init__(self, plan: _Interface, args: Any, now: int) -> None:
        self._plan = plan
        self._handle = plan.function("[constructor]scan")(args, now)

    def next(self) -> Any:
        return self._plan.function("[method]scan.next")(self._handle)

    def feed(self, messages: list[Any]) -> None:
        self._plan.function("[method]scan.feed")(self._handle, messages)

    def finish(self) -> Any:
        handle, self._handle = self._handle, None
        return self._plan.function("[static]scan.finish")(handle)

    def __enter__(self) -> Scan:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._handle is not None:
            self._handle.drop(self._plan._core.store)


class Core:
    """The component at ``path``, instantiated: its interfaces ``validate``, ``apply`` and
    ``plan``. Refuses a component that imports anything (this one imports nothing: no WASI)."""

    def __init__(self, path: str | Path) -> None:
        engine = wasmtime.Engine()
        self.store = wasmtime.Store(engine)
        component = wc.Component.from_file(engine, str(path))
        imports = component.type.imports(engine)
        if imports:
            raise ValueError(f"{path}: the component imports {sorted(imports)}")
        self.exports = sorted(component.type.exports(engine))
        self._instance = wc.Linker(engine).instantiate(self.store, component)
        self.validate = _Interface(self, "validate")
        self.apply = _Interface(self, "apply")
        self.plan = _Interface(self, "plan")

    def _export(self, interface: str) -> wc.ExportIndex:
        prefix = f"{PACKAGE}/{interface}@"
        name = next((e for e in self.exports if e.startswith(prefix)), None)
        index = name and self._instance.get_export_index(self.store, name)
        if not index:
            raise ValueError(f"the component exports no interface {PACKAGE}/{interface}")
        return index

    @property
    def version(self) -> str:
        """The version of the WIT package ``deadletter:queue`` the component exports."""
        return self.exports[0].rsplit("@", 1)[1]

    def batches(self, limit: int) -> Batches:
        """A new ``plan.batches`` resource."""
        return Batches(self.plan, limit)

    def scan(self, args: Any, now: int) -> Scan:
        """A new ``plan.scan`` resource over the checked ``list-args``."""
        return Scan(self.plan, args, now)
