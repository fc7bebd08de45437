"""The one rule every command's options follow, applied to the whole command tree at once.

Order: `--zookeeper`, `--bootstrap-server` and `--group` (those a command has) come first, in
that order; then the command's own options, as declared; then `--property`,
`--zk-tls-config-file` and `--json`, last.

Environment variables: an option that sets a setting shares that setting's variable in every
command (`SHARED_VARIABLES`: `--zookeeper` is `ZKCONSUMER_ZOOKEEPER_CONNECT`, `--group` naming
one group is `ZKCONSUMER_GROUP_ID`, ...); any other option's is `ZKCONSUMER_`, the command's
words and the option's long name as `--help` shows it, upper case, dashes to underscores:
`zkconsumer group cutover --timeout` is `ZKCONSUMER_GROUP_CUTOVER_TIMEOUT`. The names click
made up from the parameters' names before (`ZKCONSUMER_GROUP_CUTOVER_TIMEOUT_S`) still work,
with a warning, where they differ (`deprecated_variables`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import click

PREFIX = "ZKCONSUMER"
LEADING = ("--zookeeper", "--bootstrap-server", "--group")
TRAILING = ("--property", "--zk-tls-config-file", "--json")
SHARED_VARIABLES = {
    "--zookeeper": "ZKCONSUMER_ZOOKEEPER_CONNECT",
    "--bootstrap-server": "ZKCONSUMER_BOOTSTRAP_SERVER",
    "--group": "ZKCONSUMER_GROUP_ID",  # where it names one group (not repeatable)
    "--metrics-port": "ZKCONSUMER_METRICS_PORT",
    "--metrics-host": "ZKCONSUMER_METRICS_HOST",
    "--work-dir": "ZKCONSUMER_CLUSTER_DIR",  # the local cluster's folder, one for every command
}
# The global options are the command line's own settings: `zkconsumer --log-format`.
GLOBAL_VARIABLES = {"--log-format": "ZKCONSUMER_LOG_FORMAT",
                    "--log-level": "ZKCONSUMER_LOG_LEVEL"}


def long_name(option: click.Option) -> str:
    """The option's first long flag (`--format` of `--format/-f`, `--kafka-offsets` of
    `--kafka-offsets/--no-kafka-offsets`)."""
    return next(flag for flag in option.opts if flag.startswith("--"))


def variable_of(path: tuple[str, ...], option: click.Option) -> str | None:
    """The variable the rule gives the option of the command `path` (its words after
    `zkconsumer`); None for one that takes none (`--version`, `--help`)."""
    name = long_name(option)
    if not option.allow_from_autoenv or name in ("--version", "--help"):
        return None
    if not path and name in GLOBAL_VARIABLES:
        return GLOBAL_VARIABLES[name]
    if name in SHARED_VARIABLES and not (name == "--group" and option.multiple):
        return SHARED_VARIABLES[name]
    return "_".join([PREFIX, *path, name[2:]]).upper().replace("-", "_")


def order_key(option: click.Parameter) -> int:
    """0, 1, 2 for the leading ones, then 3 for the command's own, then 4+ for the trailing."""
    name = long_name(option) if isinstance(option, click.Option) else ""
    if name in LEADING:
        return LEADING.index(name)
    if name in TRAILING:
        return len(LEADING) + 1 + TRAILING.index(name)
    return len(LEADING)


def commands(command: click.Command, path: tuple[str, ...] = ()
             ) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command and group under `command`, with the words that invoke it."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from commands(sub, (*path, name))


def automatic_variable(path: tuple[str, ...], option: click.Option) -> str:
    """The name click's `auto_envvar_prefix` gives the option (from its parameter's name)."""
    return "_".join([PREFIX, *path, option.name or ""]).upper().replace("-", "_")


# Filled by `apply_rules`: the automatic names that differ from the rule's, to their new names.
DEPRECATED: dict[str, str] = {}


def apply_rules(root: click.Command, root_path: tuple[str, ...] = ()) -> None:
    """Orders the options of `root` (the command `root_path`) and of every command under it, and
    names their variables by the rule; `--help` shows each option's variable (the automatic ones
    are not guessable)."""
    for path, command in commands(root, root_path):
        command.params.sort(key=order_key)  # stable: the own options keep their order
        for param in command.params:
            if not isinstance(param, click.Option):
                continue
            variable = variable_of(path, param)
            if variable is None:
                continue
            if param.envvar is None:
                param.envvar = variable
                old = automatic_variable(path, param)
                if old != variable:
                    DEPRECATED[old] = variable
            param.show_envvar = True


def deprecated_variables(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """The old variable names set in `environ`, each with the name it is now; they still work
    (click reads a command's automatic names after the explicit ones)."""
    return [(old, new) for old, new in sorted(DEPRECATED.items()) if environ.get(old)]
