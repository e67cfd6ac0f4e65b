"""A method call the method's signature rejects, on an estimator the cell itself builds from a kernel class:
``m = LinearRegression(); m.fit(X, y, epochs=3)`` -> TypeError.

The instance exists only when the cell runs, so the probe reads the method on the kernel's class
instead (chain ``LinearRegression.fit``, the unbound function: ``self`` first). Its ``params``
follow the same rule as ``python.call-signature``'s (kernel/agent/probe/sum_python.py): sent only
when the signature is the real contract, through known forwarding wrappers (scikit-learn's
``_fit_context``) and never through other ones. The class must be a scikit-learn class the walk saw
constructed (``Val.est``) whose own construction contract is plain (the class summary has
``params``: ``type.__call__``, ``object.__new__``, a plain ``__init__``), so the new instance finds
the method on its class. A class the cell imports itself is read from the module the kernel has
loaded (chains ``@module.C`` and ``@module.C.method``, ``CellFacts.imported_names``)."""

from __future__ import annotations

import ast

from crane_lsp.analysis.kinds import Kind
from crane_lsp.analysis.values import val_from_summary
from crane_lsp.analysis.walk import CellWalk
from crane_lsp.checks.python import _signature
from crane_lsp.checks.registry import Finding, finding_at, step

CHECK = "python.method-signature"


@step(CHECK, on=(ast.Call,))
def built_method_signature(w: CellWalk, stmt: ast.stmt) -> list[Finding]:
    """``m.method(...)`` whose arguments the kernel class's ``method`` rejects (unknown keyword, too many)."""
    snap = w.snapshot
    for node in w.evaluated_of(stmt, ast.Call):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if not isinstance(node.func.value, ast.Name) or any(isinstance(a, ast.Starred) for a in node.args):
            continue
        if any(k.arg is None for k in node.keywords):
            continue
        recv = w.ev(node.func.value)
        if recv is None or recv.est is None or recv.est.from_kernel or recv.kind != Kind.ESTIMATOR:
            continue
        method = node.func.attr
        cls_name = _kernel_class(w, f"{recv.est.module}.{recv.est.cls}", method)
        imported = f"@{recv.est.module}.{recv.est.cls}"  # the class the cell imports (``@module.C`` chain)
        if cls_name is None and f"{imported}.{method}" in snap.variables:
            cls_name = imported
        if cls_name is None:
            continue
        cls = snap.variables.get(cls_name)
        meth = snap.variables.get(f"{cls_name}.{method}")
        fact = snap.attributes.get(f"{cls_name}.{method}")
        if cls is None or cls.kind != Kind.CLASS or not cls.params:
            continue
        if cls_name != imported and cls.module != recv.est.module:
            continue
        if meth is None or meth.kind != Kind.FUNCTION or fact is None or fact.exists is not True:
            continue
        sig = _signature(meth)
        if sig is None:
            continue
        try:
            sig.bind(
                object(), *[object() for _ in node.args], **{k.arg: object() for k in node.keywords if k.arg}
            )
        except TypeError as exc:
            shown = meth.signature or str(sig)
            label = recv.est.cls if cls_name == imported else cls_name
            return finding_at(
                w,
                CHECK,
                "TypeError",
                node,
                f"{w.text(node.func)}(): {label}.{method}{shown} rejects these arguments: {exc}",
                [(f"signature of {label}.{method}", shown)],
                [recv],
            )
    return []


def _kernel_class(w: CellWalk, qualname: str, method: str) -> str | None:
    """The kernel name (``RFC`` for ``RandomForestClassifier as RFC``) of the class the walk saw built,
    among those whose ``method`` the probe read."""
    for key in w.snapshot.variables:
        name, _, attr = key.partition(".")
        if attr != method:
            continue
        summary = w.snapshot.variables.get(name)
        if summary is None or summary.kind != Kind.CLASS or not w.trusted(name):
            continue
        v = val_from_summary(name, summary, (name,))
        known = v.qualname if v is not None and v.qualname else f"{summary.module}.{name}"
        if known == qualname:
            return name
    return None
