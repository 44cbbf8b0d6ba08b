"""rt4chart's options as Beam pipeline options, and a command line split between rt4chart and
Beam.

Each command's options are a `PipelineOptions` view (`options.view_as(AuditOptions)`), and
:class:`Rt4chartOptions` registers all of them with Beam once, so that Beam's parser knows them
beside its own and a job's options list them (the Dataflow console shows them). Beam's options
may be given anywhere on the command line (`--runner X`, `--direct_num_workers=2`,
`--streaming`): :func:`split_beam_args` sets them apart before rt4chart's parser runs, so that a
Beam option's value is never taken for an input file; an option neither knows is a usage error
naming the closest known one (:func:`reject_unknown`). Only Beam's public API is used: option
classes, `view_as`, and `get_all_options` (whose `add_extra_args_fn` hands over its parser).
"""

from __future__ import annotations

import argparse
import difflib
import re

from apache_beam.options.pipeline_options import PipelineOptions

from rt4chart.pipeline.options.flags import (
    add_audit_args,
    add_eval_args,
    add_stream_args,
    option_strings,
)
from rt4chart.transforms.common.redact import NO_EXTRA_KEYS, Redactor

_NUMBER = re.compile(r"^-\.?\d")  # a negative number is a value, not an option

class _ForBeam:
    """A parser as Beam's option registry sees it: options only (positionals stay on rt4chart's
    parser), none required (Beam parses every registered option on every `PipelineOptions`,
    whatever the command) and, with a shared `seen`, each option string once."""

    def __init__(self, parser: argparse.ArgumentParser, seen: set[str] | None = None):
        self._parser = parser
        self._seen = set() if seen is None else seen

    def add_argument(self, *flags: str, **kwargs):
        if not flags or not flags[0].startswith("-") or self._seen.intersection(flags):
            return None
        self._seen.update(flags)
        kwargs.pop("required", None)
        return self._parser.add_argument(*flags, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self._parser, name)


class CommandOptions(PipelineOptions):
    """A command's options as a view of the job's `PipelineOptions`
    (`options.view_as(AuditOptions).window_size`). Adds no option itself: Beam's registry walks
    the direct subclasses of PipelineOptions, and registers the commands' options once through
    :class:`Rt4chartOptions` (audit, stream and eval share most of them)."""

    @classmethod
    def dests(cls) -> list[str]:
        """The names (argparse dests) of the command's options."""
        return list(cls([]).get_all_options(current_only=True))


class AuditOptions(CommandOptions):
    """`rt4chart audit`'s options."""

    @classmethod
    def _add_argparse_args(cls, parser) -> None:
        add_audit_args(_ForBeam(parser))


class StreamOptions(CommandOptions):
    """`rt4chart stream`'s options (a Flex Template's parameters)."""

    @classmethod
    def _add_argparse_args(cls, parser) -> None:
        add_stream_args(_ForBeam(parser))


class EvalCommandOptions(CommandOptions):
    """`rt4chart eval`'s options."""

    @classmethod
    def _add_argparse_args(cls, parser) -> None:
        add_eval_args(_ForBeam(parser))


class Rt4chartOptions(PipelineOptions):
    """Every rt4chart option, registered with Beam once: Beam's parser (`get_all_options`)
    knows them beside its own, and a job's options list them (Dataflow shows them)."""

    @classmethod
    def _add_argparse_args(cls, parser) -> None:
        seen: set[str] = set()
        for command in (StreamOptions, EvalCommandOptions, AuditOptions):  # None defaults first
            command._add_argparse_args(_ForBeam(parser, seen))


COMMAND_OPTIONS: dict[str, type[CommandOptions]] = {
    "audit": AuditOptions, "stream": StreamOptions, "eval": EvalCommandOptions}


def with_command_options(options: PipelineOptions, args: argparse.Namespace,
                         keys: Redactor = NO_EXTRA_KEYS) -> PipelineOptions:
    """`options` holding the command's parsed values as well (text redacted, of the run's
    `keys` too: a job's options are shown in the Dataflow console; the job itself runs from
    the typed config)."""
    view = options.view_as(COMMAND_OPTIONS[args.command])
    for dest in view.dests():
        value = getattr(args, dest, None)
        if isinstance(value, str):
            value = keys.redact(value)
        elif isinstance(value, list):
            value = [keys.redact(v) if isinstance(v, str) else v for v in value]
        setattr(view, dest, value)
    return options


def _beam_parser() -> argparse.ArgumentParser:
    """Beam's parser with every registered option (rt4chart's included): `get_all_options`
    hands it to its public `add_extra_args_fn` callback once all option classes have added
    their arguments."""
    parsers: list[argparse.ArgumentParser] = []
    PipelineOptions([]).get_all_options(add_extra_args_fn=parsers.append)
    return parsers[0]


def rt4chart_option_strings() -> set[str]:
    """Every option string of rt4chart's commands (as registered with Beam): the declared
    options' flags (`options/flags.py`)."""
    return option_strings()


class _OptionStrings:
    """What a Beam option class's `_add_argparse_args` (Beam's hook for defining options, the
    one rt4chart's own views override) is given instead of a parser: keeps the option strings
    of its `add_argument` calls, in order."""

    def __init__(self) -> None:
        self.strings: list[str] = []

    def add_argument(self, *flags: str, **_kwargs) -> None:
        self.strings += [f for f in flags if f.startswith("-")]

    add_value_provider_argument = add_argument  # Beam's templated options

    def add_argument_group(self, *_args, **_kwargs) -> _OptionStrings:
        return self

    add_mutually_exclusive_group = add_argument_group

    def get_default(self, _dest: str) -> None:
        return None


def beam_option_strings() -> list[str]:
    """The option strings of Beam's own options (and of Beam plug-ins loaded), not rt4chart's:
    those of the option classes Beam's registry walks (PipelineOptions' direct subclasses)."""
    recorder = _OptionStrings()
    for cls in PipelineOptions.__subclasses__():
        if cls not in (Rt4chartOptions, CommandOptions):
            cls._add_argparse_args(recorder)
    ours = rt4chart_option_strings() | {"-h", "--help"}
    return list(dict.fromkeys(s for s in recorder.strings if s not in ours))


def _beam_tokens(parser: argparse.ArgumentParser, tokens: list[str]) -> int:
    """How many of `tokens` (an option, and the token after it if any) Beam's parser takes:
    0 when the option is not Beam's."""
    if len(tokens) > 1 and tokens[1].startswith("-"):
        tokens = tokens[:1]
    _, unknown = parser.parse_known_args(tokens)
    if not unknown:
        return len(tokens)
    return 1 if unknown == tokens[1:] else 0


def split_beam_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """Separate Beam's own pipeline options (`--runner X`, `--direct_num_workers=2`,
    `--streaming`) from rt4chart's arguments, so that a Beam option's value is not taken for an
    input. An option neither knows stays with rt4chart's arguments (see `reject_unknown`)."""
    parser = _beam_parser()
    ours_everywhere = rt4chart_option_strings() | {"--help"}
    ours: list[str] = []
    beams: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        ours_only = not token.startswith("--") or token.split("=", 1)[0] in ours_everywhere
        taken = 0 if ours_only else _beam_tokens(parser, argv[i:i + 2])
        (beams if taken else ours).extend(argv[i:i + max(taken, 1)])
        i += max(taken, 1)
    return ours, beams


def unknown_option_message(token: str, known: list[str]) -> str:
    """"unknown option --windw-size; did you mean --window-size?" (the closest known option)."""
    name = token.split("=", 1)[0]
    candidates = [k for k in known if k.startswith("--") and k != "--help"]
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.75)
    return f"unknown option {name}" + (f"; did you mean {close[0]}?" if close else "")


class KnownOptionsParser(argparse.ArgumentParser):
    """An ArgumentParser that keeps its option strings, and its sub-commands' parsers, so that
    :func:`reject_unknown` can tell an unknown option before parsing (argparse's public API
    only: what `add_argument` returns, and `add_subparsers`' `parser_class`)."""

    def __init__(self, *args, **kwargs) -> None:
        self.option_strings: list[str] = []  # before argparse adds -h/--help
        self.sub_parsers: list[KnownOptionsParser] = []
        super().__init__(*args, **kwargs)

    def add_argument(self, *args, **kwargs) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.option_strings += action.option_strings
        return action

    def add_subparsers(self, **kwargs):
        kwargs.setdefault("parser_class", self.new_sub_parser)
        return super().add_subparsers(**kwargs)

    def new_sub_parser(self, **kwargs) -> KnownOptionsParser:
        """A sub-command's parser, kept (`add_subparsers` makes them with this)."""
        parser = type(self)(**kwargs)
        self.sub_parsers.append(parser)
        return parser

    def all_option_strings(self) -> list[str]:
        """The parser's option strings, its sub-commands' included (`eval compare`)."""
        out = list(self.option_strings)
        for sub in self.sub_parsers:
            out += sub.all_option_strings()
        return out


def reject_unknown(commands: dict[str, KnownOptionsParser], tokens: list[str]) -> None:
    """Exit 2 through the command's parser (its usage, then the error) on an option neither
    rt4chart nor Beam knows, named with the closest known one. Checked before the command's
    parser runs, so that the unknown option's value is not taken for an input or a
    sub-command. `tokens`: rt4chart's part of the command line (Beam's options set apart);
    with -h/--help, the help comes first."""
    words = [t for t in tokens if not t.startswith("-")]
    if not words or words[0] not in commands or {"-h", "--help"} & set(tokens):
        return  # the root parser's help, version or error
    command = commands[words[0]]
    known = command.all_option_strings()
    at = tokens.index(words[0])
    for token in tokens[:at] + tokens[at + 1:]:
        if token == "--":
            return
        if token.startswith("-") and token != "-" and not _NUMBER.match(token) and (  # -: stdin
                token.split("=", 1)[0] not in known):
            command.error(unknown_option_message(token, known + beam_option_strings()))


def check_unknown(command: argparse.ArgumentParser, unknown: list[str]) -> None:
    """Exit 2 through `command`'s parser on what it did not take (arguments left over)."""
    if unknown:
        command.error(f"unrecognized arguments: {' '.join(unknown)}")
