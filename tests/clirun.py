"""The command line as the tests call it: run(*args) invokes `topicscale ARGS` in this process."""
from click.testing import CliRunner

from topicscale.cli import cli


def run(*args, ok=True):
    """The click Result of `topicscale ARGS` (arguments as strings); with ok, exit status 0 is
    asserted (the output shown when it is not)."""
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def run_stopped(monkeypatch, polls, *args):
    """`topicscale ARGS` in which the stop guard (guards.StopOnSignal) answers "stop" from its
    (polls + 1)-th poll on, as after a signal: (the click Result, the polls made)."""
    from topicscale import guards
    made = []

    def stop(self):
        made.append(None)
        return len(made) > polls

    with monkeypatch.context() as m:
        m.setattr(guards.StopOnSignal, "__call__", stop)
        result = CliRunner().invoke(cli, [str(a) for a in args])
    return result, len(made)
