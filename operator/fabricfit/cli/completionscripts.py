"""The completion scripts ``fabricfit completion`` prints: bash, zsh and fish, from one model.

Each renderer takes the commands of :mod:`fabricfit.cli.completion` and returns the whole
script. Values come from the package (presets, collectives, choices), so a script is as current
as the ``fabricfit`` that wrote it; regenerate it after an upgrade.

bash reads ``COMP_WORDS``/``COMP_CWORD`` (``--flag=value`` arrives as three words, as bash
splits at ``=``), offers the commands, then the options of the command typed, then the values
of the option before the cursor; an empty answer falls back to bash's file names
(``complete -o default``). zsh uses ``_arguments`` per command, fish one ``complete`` line per
option, guarded by ``__fish_seen_subcommand_from``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fabricfit import __version__
from fabricfit.cli.completion import Command, Option

TOP_OPTIONS = (
    Option(("-h", "--help"), "show the help and exit"),
    Option(("--version",), "print the version and exit"),
)


def _header(shell: str) -> str:
    return f"# fabricfit {__version__} completion for {shell}: `fabricfit completion {shell}`\n"


def _bash_words(words: Sequence[str]) -> str:
    """Words for ``compgen -W``: names and flags never hold quotes or spaces."""
    return " ".join(words)


def bash(commands: Sequence[Command]) -> str:
    top = [*(c.name for c in commands), *(f for o in TOP_OPTIONS for f in o.flags)]
    lines = [
        _header("bash"),
        "_fabricfit() {",
        "    local cur prev cmd i",
        '    cur="${COMP_WORDS[COMP_CWORD]}"',
        '    prev="${COMP_WORDS[COMP_CWORD-1]}"',
        '    if [[ "$cur" == "=" ]]; then cur=""; prev="${COMP_WORDS[COMP_CWORD-1]}"; fi',
        '    if [[ "$prev" == "=" ]]; then prev="${COMP_WORDS[COMP_CWORD-2]}"; fi',
        '    cmd=""',
        "    for (( i = 1; i < COMP_CWORD; i++ )); do",
        '        case "${COMP_WORDS[i]}" in',
        "            -*) ;;",
        '            *) cmd="${COMP_WORDS[i]}"; break ;;',
        "        esac",
        "    done",
        "    COMPREPLY=()",
        '    case "$cmd" in',
        f'        "") COMPREPLY=($(compgen -W "{_bash_words(top)}" -- "$cur")) ;;',
    ]
    for command in commands:
        lines += _bash_command(command)
    lines += ["    esac", "}", "complete -o default -F _fabricfit fabricfit", ""]
    return "\n".join(lines)


def _bash_command(command: Command) -> list[str]:
    lines = [f"        {command.name})", '            case "$prev" in']
    for option in command.options:
        if not option.takes_value:
            continue
        if option.values:
            answer = f'COMPREPLY=($(compgen -W "{_bash_words(option.values)}" -- "$cur"))'
        elif option.files:
            answer = ":"  # nothing here: bash's default completion offers the file names
        else:
            answer = "compopt +o default 2>/dev/null"  # free text: offer nothing
        lines.append(f"                {'|'.join(option.flags)}) {answer}; return 0 ;;")
    flags = [f for o in command.options for f in o.flags]
    lines += [
        "            esac",
        '            if [[ "$cur" == -* ]]; then',
        f'                COMPREPLY=($(compgen -W "{_bash_words(flags)}" -- "$cur"))',
    ]
    if command.positional_values:
        words = _bash_words(command.positional_values)
        lines += [
            "            else",
            f'                COMPREPLY=($(compgen -W "{words}" -- "$cur"))',
        ]
    lines += ["            fi", "            ;;"]
    return lines


def _zsh_text(text: str) -> str:
    """``text`` inside a single-quoted ``_arguments`` spec: no brackets, colons escaped."""
    text = text.replace("[", "(").replace("]", ")").replace(":", "\\:")
    return text.replace("'", "'\\''")


def _zsh_option(option: Option) -> str:
    what = f"[{_zsh_text(option.help)}]"
    if option.takes_value:
        values = f"({' '.join(option.values)})" if option.values else ""
        what += f":{option.flags[-1].lstrip('-')}:{'_files' if option.files else values or ' '}"
    repeat = "*" if option.repeatable else ""
    if len(option.flags) == 1:
        return f"'{repeat}{option.flags[0]}{what}'"
    group = f"({' '.join(option.flags)})" if not repeat else "*"
    return f"'{group}'{{{','.join(option.flags)}}}'{what}'"


def zsh(commands: Sequence[Command]) -> str:
    described = [f"        '{c.name}:{_zsh_text(c.help)}'" for c in commands]
    lines = [
        "#compdef fabricfit",
        _header("zsh").rstrip("\n"),
        "_fabricfit() {",
        '    local curcontext="$curcontext" state line',
        "    typeset -A opt_args",
        "    _arguments -C \\",
        *(f"        {_zsh_option(o)} \\" for o in TOP_OPTIONS),
        "        '1:command:->command' \\",
        "        '*::argument:->argument'",
        "    case $state in",
        "    command)",
        "        local -a commands",
        "        commands=(",
        *described,
        "        )",
        "        _describe -t commands 'fabricfit command' commands ;;",
        "    argument)",
        "        case $line[1] in",
    ]
    for command in commands:
        specs = [_zsh_option(o) for o in command.options]
        if command.positional_values:
            specs.append(f"'1:{command.name}:({' '.join(command.positional_values)})'")
        elif command.positional_files:
            specs.append("'*:file:_files'")
        lines.append(f"        {command.name})")
        lines.append("            _arguments \\")
        lines += [f"                {spec} \\" for spec in specs[:-1]]
        lines.append(f"                {specs[-1]} ;;")
    lines += [
        "        esac ;;",
        "    esac",
        "}",
        'if [ "$funcstack[1]" = "_fabricfit" ]; then',  # autoloaded from $fpath: complete now
        '    _fabricfit "$@"',
        "else",  # sourced: register
        "    compdef _fabricfit fabricfit",
        "fi",
        "",
    ]
    return "\n".join(lines)


def _fish_text(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_option(command: str, option: Option) -> str:
    parts = ["complete -c fabricfit -n", _fish_text(f"__fish_seen_subcommand_from {command}")]
    for flag in option.flags:
        parts += ["-s", flag[1:]] if len(flag) == 2 else ["-l", flag[2:]]
    if option.values:
        parts += ["-x -a", _fish_text(" ".join(option.values))]
    elif option.files:
        parts.append("-r -F")
    elif option.takes_value:
        parts.append("-x")  # free text: no file names
    parts += ["-d", _fish_text(option.help)]
    return " ".join(parts)


def fish(commands: Sequence[Command]) -> str:
    lines = [_header("fish").rstrip("\n"), "complete -c fabricfit -f"]
    for option in TOP_OPTIONS:
        flags = " ".join(f"-s {f[1:]}" if len(f) == 2 else f"-l {f[2:]}" for f in option.flags)
        lines.append(
            f"complete -c fabricfit -n __fish_use_subcommand {flags} -d {_fish_text(option.help)}"
        )
    for command in commands:
        lines.append(
            f"complete -c fabricfit -n __fish_use_subcommand -a {command.name} "
            f"-d {_fish_text(command.help)}"
        )
    for command in commands:
        lines += [_fish_option(command.name, option) for option in command.options]
        guard = _fish_text(f"__fish_seen_subcommand_from {command.name}")
        if command.positional_values:
            values = _fish_text(" ".join(command.positional_values))
            lines.append(f"complete -c fabricfit -n {guard} -x -a {values}")
        elif command.positional_files:
            lines.append(f"complete -c fabricfit -n {guard} -F")
    return "\n".join(lines) + "\n"


RENDERERS: dict[str, Callable[[Sequence[Command]], str]] = {"bash": bash, "zsh": zsh, "fish": fish}
