"""TOML presets for `fit`: a file's keys become click defaults, so flags on the command line win."""
import tomllib
from pathlib import Path

from .errors import TopicscaleError

PRESET_DIR = Path(__file__).resolve().parent.parent / "configs"


def find_preset(spec):
    """A path to a TOML file, or the name of a preset in configs/ (with or without .toml)."""
    path = Path(spec)
    if path.is_file():
        return path
    for candidate in (PRESET_DIR / spec, PRESET_DIR / f"{spec}.toml"):
        if candidate.is_file():
            return candidate
    names = sorted(p.stem for p in PRESET_DIR.glob("*.toml")) if PRESET_DIR.is_dir() else []
    raise TopicscaleError(f"no config file {spec!r}" + (f" (presets: {', '.join(names)})" if names else ""))


def load_defaults(spec, command, ctx=None):
    """Read a preset into a click default_map for `command` (keys may use - or _); a value its
    option's type refuses is an error that names the file and the setting. A relative path is
    taken from the file's folder, as a reader of the file would take it."""
    import click
    path = find_preset(spec)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TopicscaleError(f"{path}: not valid TOML: {exc}") from None
    params = {opt[2:].replace("-", "_"): p for p in command.params
              for opt in getattr(p, "opts", ()) if opt.startswith("--") and p.name != "config"}
    defaults = {}
    for key, value in data.items():
        param = params.get(key.replace("-", "_"))
        if param is None:
            raise TopicscaleError(f"{path}: unknown setting {key!r}; valid: "
                                  f"{', '.join(sorted(n.replace('_', '-') for n in params))}")
        if isinstance(param.type, click.Path) and isinstance(value, str):
            value = str(path.parent / Path(value).expanduser())     # an absolute path stays itself
        if not param.multiple and param.nargs == 1:
            try:    # checked as the command line's text: click would take 10.7 or true as a count
                param.type.convert(_as_typed(value), param, ctx)
            except click.BadParameter as exc:
                raise TopicscaleError(f"{path}: {key}: {exc.message}") from None
        defaults[param.name] = value
    return defaults


def _as_typed(value):
    """A TOML value as it would be typed on the command line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)
