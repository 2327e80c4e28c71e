"""Every part registered in the matrix provides its Protocol and takes exactly the fit options it
declares (so no option can be accepted by a class and silently dropped, or declared and unused)."""
import inspect

import pytest

from topicscale import contracts, options, registry


def members(protocol):
    return {n for n in vars(protocol) if not n.startswith("_")} | set(protocol.__annotations__)


def taken_options(cls):
    """The fit options among the keyword arguments of cls's constructor."""
    return set(inspect.signature(cls).parameters) & set(options.BY_NAME) - {"seed"}


@pytest.mark.parametrize("kind", sorted(registry.MODELS))
def test_models_provide_the_protocol(kind):
    cls = registry.model_class(kind)
    assert cls.kind == kind
    missing = {m for m in members(contracts.TopicModel) if not hasattr(cls, m)}
    missing -= {"step", "docs_seen", "settings"}            # instance attributes, checked on a model below
    assert not missing


@pytest.mark.parametrize("name", sorted(registry.LOCAL_STEPS))
def test_local_steps_provide_the_protocol_and_take_their_declared_options(name):
    cls = registry.local_step_class(name)
    assert cls.name == name
    assert all(hasattr(cls, m) for m in members(contracts.LocalStep))
    assert taken_options(cls) == set(registry.LOCAL_STEPS[name].options)


@pytest.mark.parametrize("cell", registry.MATRIX, ids=lambda c: f"{c.model}-{c.algorithm}")
def test_global_steps_provide_the_protocol_and_take_their_declared_options(cell):
    cls = registry.global_step_class(cell.model, cell.algorithm)
    assert cls.name == cell.algorithm and hasattr(cls, "step")
    assert taken_options(cls) == set(cell.step.options)
    assert set(cell.locals) <= set(registry.LOCAL_STEPS)


def test_every_part_option_is_declared_and_owned():
    declared = {o.name for o in options.PART_OPTIONS}
    owned = {o for p in list(registry.MODELS.values()) + list(registry.LOCAL_STEPS.values()) for o in p.options}
    owned |= {o for c in registry.MATRIX for o in c.step.options}
    assert owned == declared


def test_listing_choices_and_checking_options_imports_no_numba():
    import subprocess
    import sys
    code = ("import sys; from topicscale import options, registry; "
            "options.check(dict(model='lda', algorithm='svi', local='cvb0', n_topics=3)); "
            "options.markdown_tables(); print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_command_line_loads_without_numpy():
    """`topicscale --help` pays its start-up in every pipeline: the CLI and the option
    declarations import neither numpy nor numba until a command needs them."""
    import subprocess
    import sys
    code = "import sys, topicscale.cli; print(sorted(m for m in ('numpy', 'numba') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
