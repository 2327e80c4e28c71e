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
