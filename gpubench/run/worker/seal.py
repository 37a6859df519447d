"""The seal: what the harness depends on, as it was before any variant ran, and whether
it still is.

A variant runs inside the worker process and can rebind any name it reaches:
`gpubench.families.check.compare` (then a variant that writes nothing PASSes),
`torch.cuda.Event.elapsed_time`, `time.perf_counter`, a builtin gpubench calls.
The worker takes a Seal once gpubench's worker-side modules and torch are
imported and before the first task; after every task `broken()` names each
binding that no longer holds the object it held, and `restore()` puts the
originals back (the worker then retires: see gpubench/run/worker/tamper.py).

What is sealed, each compared by identity:
- every attribute of every loaded `gpubench.*` module and of every class defined
  in one (a module may gain submodules as they are imported; nothing else may
  appear), and each gpubench function's code and defaults (a replaced `__code__`
  keeps the function object);
- the functions, classes and submodules bound in torch, torch.cuda, time, os,
  json, threading, builtins, gc and random, and every attribute (and Python
  function's code) of torch.Tensor, torch.cuda.Event and random.Random (torch's C
  tensor type is immutable: a patch lands on torch.Tensor as a new name, which is
  caught);
- the modules a family takes as its ground truth (families/trusted.py: a leaderboard
  problem's reference), sealed when imported, before the submission's import;
- sys.modules' entry for each sealed module, and the trace/profile hooks.

It detects rebinding, not every trick: code in the process can still write to
memory through ctypes. Cost: see seal_cost in tests/test_tamper.py (a few ms).
"""

from __future__ import annotations

import builtins
import json
import os
import pathlib
import sys
import threading
import time
import types

import torch

from gpubench.families.trusted import trusted_modules

# Attributes that change under honest use: the warnings filter's per-module registry.
# Bookkeeping Python writes into namespaces on its own: the warnings registry, and the
# caches typing and abc fill on first use (isinstance against a runtime-checkable
# Protocol stores `__annotations__` and its member sets in the class on Python 3.11-3.12:
# a false "replaced" on CI before this list had them).
IGNORED = frozenset({"__warningregistry__", "__annotations__", "__protocol_attrs__",
                     "__non_callable_proto_members__", "__callable_proto_members_only__",
                     "_abc_impl", "__abstractmethods__", "__parameters__"})
# Third-party namespaces whose callables and submodules the timing, the check and the
# protocol rely on (data attributes such as torch.cuda._initialized change legitimately).
# `random`: the rotation draws its re-checked calls with a random.Random (run/worker/rotation.py).
THIRD_PARTY = ("torch", "torch.cuda", "time", "os", "json", "threading", "builtins", "gc",
               "random")
# How a namespace is sealed: OPEN (a gpubench module: every name; only submodules may
# appear), CLOSED (a class: every name; nothing may appear), CALLABLES (third party: the
# callables and submodules bound at sealing; names may appear).
OPEN, CLOSED, CALLABLES = "open", "closed", "callables"
# Classes whose every attribute is sealed, added names included, with their functions'
# code: random.Random draws which timed calls are re-checked (a patched randrange that keeps
# only the first calls would leave the rest unchecked).
SEALED_CLASSES = ("torch.Tensor", "torch.cuda.Event", "random.Random")


class Seal:
    """Bindings by (owner label, name) -> object, taken at construction."""

    def __init__(self):
        # label -> (owner, sealed names, kind): OPEN, CLOSED or CALLABLES (see _changes)
        self.spaces: dict[str, tuple[object, dict, str]] = {}
        self.code: dict[str, tuple] = {}  # function label -> (function, code, defaults, kw)
        self.modules: dict[str, types.ModuleType] = {}
        self.hooks = _hooks()
        self.extend()

    def extend(self) -> None:
        """Seal what was imported since (gpubench modules a task imported lazily); bindings
        already sealed keep their original objects."""
        for name, module in list(sys.modules.items()):
            if is_gpubench_module(name) and isinstance(module, types.ModuleType):
                self._seal_gpubench_module(name, module)
        for name, module in trusted_modules().items():
            self._seal_trusted_module(name, module)
        for label in THIRD_PARTY:
            owner = _resolve(label)
            if owner is not None and label not in self.spaces:
                self.modules.setdefault(label, owner)
                self.spaces[label] = (owner, _callables(owner), CALLABLES)
        for label in SEALED_CLASSES:
            owner = _resolve(label)
            if owner is not None and label not in self.spaces:
                self.spaces[label] = (owner, dict(vars(owner)), CLOSED)
                self._seal_code(label, vars(owner))

    def broken(self) -> list[str]:
        """Each binding that changed since it was sealed, as 'module.name', sorted."""
        changed = [label for label, module in self.modules.items()
                   if sys.modules.get(label, module) is not module]
        for label, (owner, names, kind) in self.spaces.items():
            changed += _changes(label, vars(owner), names, kind)
        for label, (function, code, defaults, kwdefaults) in self.code.items():
            if (function.__code__ is not code or function.__defaults__ is not defaults
                    or _items(function.__kwdefaults__) != kwdefaults):
                changed.append(f"{label}.__code__")
        if _hooks() != self.hooks:
            changed.append("sys.settrace/setprofile hooks")
        return sorted(set(changed))

    def restore(self) -> None:
        """Put every sealed binding back and remove names added to closed namespaces."""
        for label, module in self.modules.items():
            sys.modules[label] = module
        for owner, names, kind in self.spaces.values():
            _restore_space(owner, names, kind)
        for function, code, defaults, kwdefaults in self.code.values():
            function.__code__, function.__defaults__ = code, defaults
            function.__kwdefaults__ = dict(kwdefaults) if kwdefaults is not None else None
        sys.settrace(self.hooks[0])
        sys.setprofile(self.hooks[1])

    def _seal_gpubench_module(self, name: str, module: types.ModuleType) -> None:
        if name in self.spaces:
            return
        self.modules[name] = module
        self.spaces[name] = (module, dict(vars(module)), OPEN)
        self._seal_classes(name, module)
        self._seal_code(name, vars(module), only_from=name)

    def _seal_trusted_module(self, name: str, module: types.ModuleType) -> None:
        """A family's ground truth (families/trusted.py): its functions and classes by
        identity, their code, and the classes' members; its other globals (KernelBench's
        size constants, set per point) may change."""
        if name in self.spaces:
            return
        self.modules[name] = module
        self.spaces[name] = (module, _callables(module), CALLABLES)
        self._seal_code(name, vars(module))
        self._seal_classes(name, module)

    def _seal_classes(self, name: str, module: types.ModuleType) -> None:
        """Every class `module` defines: its members CLOSED, their functions' code."""
        for attribute, value in vars(module).items():
            if isinstance(value, type) and value.__module__ == name:
                self.spaces[f"{name}.{attribute}"] = (value, dict(vars(value)), CLOSED)
                self._seal_code(f"{name}.{attribute}", vars(value))

    def _seal_code(self, owner: str, namespace: dict, only_from: str | None = None) -> None:
        for attribute, value in namespace.items():
            function = _function(value)
            if function is None or (only_from and function.__module__ != only_from):
                continue
            self.code[f"{owner}.{attribute}"] = (function, function.__code__,
                                                 function.__defaults__,
                                                 _items(function.__kwdefaults__))


def is_gpubench_module(module_name: str) -> bool:
    """gpubench's own modules; not the variants' (imported as 'gpubench_spec_...')."""
    return module_name == "gpubench" or module_name.startswith("gpubench.")


def _changes(label: str, now: dict, sealed: dict, kind: str) -> list[str]:
    """Names of `sealed` bound to another object now (or gone), plus the names that must
    not appear: any in a CLOSED namespace, any but a submodule in an OPEN one (a new
    global would shadow a builtin the module calls); a CALLABLES one may gain names."""
    changed = [f"{label}.{name}" for name, value in sealed.items()
               if name not in IGNORED and now.get(name, _MISSING) is not value
               and not _torch_wrapper_of(now.get(name, _MISSING), value)]
    if kind != CALLABLES:
        changed += [f"{label}.{name}" for name in _added(now, sealed, kind)]
    return changed


# torch rebinds some of its own functions on first use of a subsystem: importing
# torch._dynamo (a Triton kernel's first launch, torch.compile, some ops) replaces
# torch.manual_seed with a functools.wraps wrapper that disables dynamo (it would get
# every later variant blamed). Such a wrapper, defined in torch's own
# files and wrapping the sealed original, is torch's doing, not the variant's.
_TORCH_DIR = str(pathlib.Path(torch.__file__).parent)


def _torch_wrapper_of(value: object, original: object) -> bool:
    """Whether `value` is a torch-defined wrapper (functools.wraps) of `original`."""
    code = getattr(value, "__code__", None)
    if code is None or not code.co_filename.startswith(_TORCH_DIR):
        return False
    inner = value
    for _ in range(4):  # a wrapper of a wrapper at most a few levels deep
        inner = getattr(inner, "__wrapped__", None)
        if inner is original:
            return True
        if inner is None:
            return False
    return False


def _added(now: dict, sealed: dict, kind: str) -> list[str]:
    if kind == OPEN and len(now) == len(sealed):  # the usual case, without a scan
        return []
    return [name for name, value in now.items()
            if name not in sealed and name not in IGNORED
            and (kind == CLOSED or not isinstance(value, types.ModuleType))]


def _restore_space(owner: object, names: dict, kind: str) -> None:
    now = vars(owner)
    for name, value in names.items():
        if name not in IGNORED and now.get(name, _MISSING) is not value:
            setattr(owner, name, value)
    if kind != CALLABLES:
        for name in _added(now, names, kind):
            delattr(owner, name)


def _callables(owner: object) -> dict:
    """The functions, classes and submodules bound in a third-party namespace."""
    return {name: value for name, value in vars(owner).items()
            if callable(value) or isinstance(value, types.ModuleType)}


def _function(value) -> types.FunctionType | None:
    """The plain function behind a module attribute or class member, if any."""
    if isinstance(value, staticmethod | classmethod):
        value = value.__func__
    return value if isinstance(value, types.FunctionType) else None


def _items(kwdefaults: dict | None) -> tuple | None:
    return None if kwdefaults is None else tuple(kwdefaults.items())


def _resolve(label: str):
    """'torch.cuda.Event' -> the object, or None when torch (or the name) is absent."""
    roots = {"time": time, "os": os, "json": json, "threading": threading,
             "builtins": builtins}
    head, *rest = label.split(".")
    owner = roots.get(head) or sys.modules.get(head)
    for part in rest:
        owner = getattr(owner, part, None)
    return owner


def _hooks() -> tuple:
    return sys.gettrace(), sys.getprofile()


class _Missing:
    pass


_MISSING = _Missing()
