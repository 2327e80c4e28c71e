"""User-facing errors: each one prints as a single line and maps to exit status 2."""


class TopicscaleError(Exception):
    """An error the user can fix (bad input, bad option, missing file)."""


class InputError(TopicscaleError):
    """Malformed input, located by file and (1-based) line number when known."""

    def __init__(self, path, line, message):
        self.path = str(path)
        self.line = line
        self.message = message
        super().__init__(str(self))

    def __str__(self):
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"
