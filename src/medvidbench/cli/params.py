"""Commands written as typed functions, built into click commands.

A command is a plain function: its docstring is its help, and each parameter is annotated with
an :class:`Option` or an :class:`Argument` (``Annotated[int | None, Option(min=1, help=...)]``).
:meth:`Group.add` builds the click command from the signature, by these rules:

- an option is named after its parameter (``data_dir``: ``--data-dir``) unless names are given;
- a ``bool`` option without names is a switch pair (``--similarity/--no-similarity``); with
  names (``Option("--json")``), a flag;
- ``Path``, ``int``, ``float`` and ``str`` values are converted by click's own types (``min`` and
  ``max`` make a range); ``X | None`` is optional; a ``list`` is a repeatable option, or an
  argument taking every remaining word;
- a parameter without a default is required.

Nothing else is read from the annotations, and no validation library is imported: a command
starts in the time click takes to import.
"""

from __future__ import annotations

import importlib
import inspect
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])
ParamCallback = Callable[[click.Context, click.Parameter, Any], Any]


class Option:
    """How one parameter is given as an option (names, help, environment variable, range)."""

    __slots__ = ("callback", "decls", "envvar", "help", "is_eager", "max", "min")

    def __init__(
        self,
        *decls: str,
        help: str = "",
        envvar: str | None = None,
        min: int | None = None,
        max: int | None = None,
        callback: ParamCallback | None = None,
        is_eager: bool = False,
    ) -> None:
        self.decls = decls
        self.help = help
        self.envvar = envvar
        self.min = min
        self.max = max
        self.callback = callback
        self.is_eager = is_eager


class Argument:
    """How one parameter is given as a positional argument (its help)."""

    __slots__ = ("help",)

    def __init__(self, help: str = "") -> None:
        self.help = help


class HelpedArgument(click.Argument):
    """A click argument with a help line, listed under "Arguments" in the command's help."""

    def __init__(self, decls: list[str], help: str = "", **attrs: Any) -> None:
        super().__init__(decls, **attrs)
        self.help = help


class Command(click.Command):
    """A click command whose help lists its arguments (with their help) before its options,
    with any click release (8.5 lists documented arguments itself; earlier ones cannot)."""

    def format_arguments(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Nothing here: :meth:`format_options` lists the arguments."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [
            (p.make_metavar(ctx), f"{p.help}  [required]" if p.required else p.help)
            for p in self.get_params(ctx)
            if isinstance(p, HelpedArgument) and p.help
        ]
        if rows:
            with formatter.section("Arguments"):
                formatter.write_dl(rows)
        super().format_options(ctx, formatter)


class Group(click.Group):
    """A command group whose commands are declared functions (see the module docstring),
    added at once (:meth:`add`) or named by ``module:attribute`` and imported when first asked
    for (:meth:`lazy`), so that a run imports the modules of its own command only."""

    def __init__(self, name: str | None = None, help: str | None = None, **attrs: Any) -> None:
        attrs.setdefault("no_args_is_help", True)
        super().__init__(name=name, help=help, **attrs)
        self._order: list[str] = []
        self._lazy: dict[str, str] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The commands in the order they were added (``--help`` lists them so)."""
        return list(self._order)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = self._lazy.pop(cmd_name, None)
        if target is not None:
            module, _, attribute = target.partition(":")
            found = getattr(importlib.import_module(module), attribute)
            self.commands[cmd_name] = (
                found if isinstance(found, click.Command) else command(found, cmd_name)
            )
        return self.commands.get(cmd_name)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        super().add_command(cmd, name)
        self._order.append(name or cmd.name or "")

    def add(self, func: F, name: str | None = None) -> F:
        """Add ``func`` as the command ``name`` (default: its own name, ``_`` as ``-``)."""
        self.add_command(command(func, name))
        return func

    def lazy(self, name: str, target: str) -> None:
        """Add the command ``name``: ``module:attribute``, a declared function or a click
        command (a group), imported when the command is first asked for."""
        self._lazy[name] = target
        self._order.append(name)

    def subcommand(self, name: str | None = None) -> Callable[[F], F]:
        """:meth:`add` as a decorator."""
        return lambda func: self.add(func, name)


def command(func: Callable[..., Any], name: str | None = None) -> Command:
    """The click command of a declared function."""
    hints = typing.get_type_hints(func, include_extras=True)
    params: list[click.Parameter] = []
    lists: dict[str, Any] = {}
    for p in inspect.signature(func).parameters.values():
        base, spec = _split(hints[p.name], f"{func.__qualname__}({p.name})")
        required = p.default is inspect.Parameter.empty
        default = None if required else p.default
        base = _unwrap_optional(base)
        many = typing.get_origin(base) is list
        if many:
            (base,) = typing.get_args(base)
            lists[p.name] = default
        if isinstance(spec, Argument):
            # No default at all for a required parameter: click takes an explicit None as
            # a value given, and would not ask for the missing one.
            given = {} if required or many else {"default": default}
            params.append(
                HelpedArgument(
                    [p.name],
                    help=spec.help,
                    type=_click_type(base, None),
                    nargs=-1 if many else 1,
                    required=required,
                    **given,
                )
            )
        else:
            params.append(_option(p.name, base, spec, default, required=required, many=many))
    callback = _lists_as_lists(func, lists) if lists else func
    return Command(
        name or func.__name__.strip("_").replace("_", "-"),
        callback=callback,
        params=params,
        help=inspect.getdoc(func),
    )


def _option(
    name: str, base: Any, spec: Option, default: Any, *, required: bool, many: bool
) -> click.Option:
    flag = base is bool and not many
    dashed = name.replace("_", "-")
    decls = list(spec.decls) or ([f"--{dashed}/--no-{dashed}"] if flag else [f"--{dashed}"])
    # The default is shown unless there is none to show: None, an empty text, or a flag's False
    # (a switch pair shows its default side; ``0`` is shown, though it equals False).
    switch_pair = flag and not spec.decls
    shown = switch_pair or not (default is None or default is False or default == "")
    given = {} if required else {"default": bool(default) if flag else default}
    return click.Option(
        [*decls, name],
        type=None if flag else _click_type(base, spec),
        is_flag=flag,
        multiple=many,
        required=required,
        **given,
        help=spec.help,
        envvar=spec.envvar,
        show_envvar=spec.envvar is not None,
        show_default=shown,
        callback=spec.callback,
        is_eager=spec.is_eager,
    )


def _split(hint: Any, where: str) -> tuple[Any, Option | Argument]:
    """A parameter's type and its :class:`Option` or :class:`Argument`."""
    if typing.get_origin(hint) is typing.Annotated:
        base, *extras = typing.get_args(hint)
        for extra in extras:
            if isinstance(extra, Option | Argument):
                return base, extra
    raise TypeError(f"{where}: annotate it as Annotated[type, Option(...) or Argument(...)]")


def _unwrap_optional(hint: Any) -> Any:
    """``X`` for ``X | None`` (the default, None, says it is optional), else ``hint``."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        members = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(members) == 1:
            return members[0]
    return hint


def _click_type(base: Any, spec: Option | None) -> click.ParamType[Any]:
    low, high = (spec.min, spec.max) if spec is not None else (None, None)
    if base is Path:
        return click.Path(path_type=Path)
    if base is int:
        return click.IntRange(low, high) if low is not None or high is not None else click.INT
    if base is float:
        return click.FloatRange(low, high) if low is not None or high is not None else click.FLOAT
    if base is str:
        return click.STRING
    raise TypeError(f"no command-line type for {base!r}")


def _lists_as_lists(func: Callable[..., Any], lists: dict[str, Any]) -> Callable[..., Any]:
    """``func`` given lists where click gives tuples (an absent repeatable option: its default)."""

    def run(**kwargs: Any) -> Any:
        for key, default in lists.items():
            value = kwargs[key]
            kwargs[key] = list(value) if value else default
        return func(**kwargs)

    return run
