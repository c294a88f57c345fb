// argparse: Python source in the subset after CPython 3.12's Lib/argparse.py.
// It reads the program's own arguments (sys.argv, from `kiln-cli run PROG.py
// -- ARGS...`); --help and errors end the program through sys.exit as
// CPython's do (status 0 and 2).
#include "core/python/compiler.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kArgparseSource = R"PY(# argparse, after CPython 3.12's: the same parsing (interleaved optionals
# and positionals, abbreviations, '--'), help and usage texts (at 78
# columns, as CPython formats them without a terminal), and errors (usage
# and "PROG: error: ..." on stderr, exit status 2).
import sys
import _kiln_std

SUPPRESS = "==SUPPRESS=="
OPTIONAL = "?"
ZERO_OR_MORE = "*"
ONE_OR_MORE = "+"
PARSER = "A..."
REMAINDER = "..."
_WIDTH = 78
_MAX_HELP_POSITION = 24


def _raise(kind, message):
    _kiln_std.raise_error(kind, message)


def _basename(p):
    i = len(p) - 1
    while i >= 0 and p[i] != "/":
        i -= 1
    return p[i + 1:]


def _ident(x):
    return _kiln_std.identity(x)


def _is_space(c):
    return c == " " or c == "\t" or c == "\n" or c == "\r" or c == "\f" or c == "\v"


def _words(text):
    words = []
    cur = ""
    for c in text:
        if _is_space(c):
            if cur:
                words.append(cur)
            cur = ""
        else:
            cur += c
    if cur:
        words.append(cur)
    return words


def _wrap(text, width):
    lines = []
    line = ""
    for w in _words(text):
        while len(w) > width and width > 0:
            room = width - len(line) - (1 if line else 0)
            if room <= 0:
                lines.append(line)
                line = ""
                continue
            if line:
                line += " "
            lines.append(line + w[:room])
            line = ""
            w = w[room:]
        if not line:
            line = w
        elif len(line) + 1 + len(w) <= width:
            line += " " + w
        else:
            lines.append(line)
            line = w
    if line:
        lines.append(line)
    return lines


def _is_digits(s, allow_underscore):
    if not s:
        return False
    prev = "_"
    for c in s:
        if c == "_" and allow_underscore:
            if prev == "_":
                return False
        elif c not in "0123456789":
            return False
        prev = c
    return prev != "_"


def _valid_int(s):
    s = s.strip()
    if s[:1] == "+" or s[:1] == "-":
        s = s[1:]
    return _is_digits(s, True)


def _valid_float(s):
    s = s.strip().lower()
    if s[:1] == "+" or s[:1] == "-":
        s = s[1:]
    if s == "inf" or s == "infinity" or s == "nan":
        return True
    mant = s
    exp = None
    for i in range(len(s)):
        if s[i] == "e":
            mant = s[:i]
            exp = s[i + 1:]
            break
    if exp is not None:
        if exp[:1] == "+" or exp[:1] == "-":
            exp = exp[1:]
        if not _is_digits(exp, True):
            return False
    parts = mant.split(".")
    if len(parts) > 2:
        return False
    if len(parts) == 1:
        return _is_digits(parts[0], True)
    a, b = parts[0], parts[1]
    if not a and not b:
        return False
    return (not a or _is_digits(a, True)) and (not b or _is_digits(b, True))


def _is_negative_number(s):
    if len(s) < 2 or s[0] != "-":
        return False
    body = s[1:]
    if _is_digits(body, False):
        return True
    parts = body.split(".")
    return len(parts) == 2 and (parts[0] == "" or _is_digits(parts[0], False)) and _is_digits(parts[1], False)


class Namespace:
    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)

    def __repr__(self):
        d = _kiln_std.instance_dict(self)
        parts = [k + "=" + repr(v) for k, v in d.items()]
        return "Namespace(" + ", ".join(parts) + ")"

    def __eq__(self, other):
        if not isinstance(other, Namespace):
            return False
        return _kiln_std.instance_dict(self) == _kiln_std.instance_dict(other)

    def __contains__(self, key):
        return key in _kiln_std.instance_dict(self)


class ArgumentError(Exception):
    def __init__(self, argument, message):
        self.argument_name = None if argument is None else _action_name(argument)
        self.message = message

    def __str__(self):
        if self.argument_name is None:
            return self.message
        return "argument " + self.argument_name + ": " + self.message


class ArgumentTypeError(Exception):
    pass


class FileType:
    def __init__(self, *args, **kwargs):
        _kiln_std.refuse("argparse.FileType is outside Kiln's Python subset (programs cannot open files)")


class HelpFormatter:
    pass


class RawDescriptionHelpFormatter(HelpFormatter):
    pass


class RawTextHelpFormatter(RawDescriptionHelpFormatter):
    pass


class ArgumentDefaultsHelpFormatter(HelpFormatter):
    pass


class MetavarTypeHelpFormatter(HelpFormatter):
    pass


class BooleanOptionalAction:
    pass


class Action:
    def __init__(self, option_strings, dest, kind, nargs=None, const=None, default=None, type=None, choices=None,
                 required=False, help=None, metavar=None, version=None):
        self.option_strings = option_strings
        self.dest = dest
        self.kind = kind
        self.nargs = nargs
        self.const = const
        self.default = default
        self.type = type
        self.choices = choices
        self.required = required
        self.help = help
        self.metavar = metavar
        self.version = version
        self.container = None

    def __repr__(self):
        names = ["option_strings", "dest", "nargs", "const", "default", "type", "choices", "required", "help", "metavar"]
        parts = [n + "=" + repr(getattr(self, n)) for n in names]
        return "Action(" + ", ".join(parts) + ")"


_ZERO_ARG_KINDS = ["store_const", "store_true", "store_false", "append_const", "count", "help", "version"]


class _Group:
    def __init__(self, parser, title, description, exclusive, required):
        self._parser = parser
        self.title = title
        self.description = description
        self._exclusive = exclusive
        self.required = required
        self._group_actions = []

    def add_argument(self, *args, **kwargs):
        action = self._parser._add_action_from(args, kwargs, self)
        self._group_actions.append(action)
        return action

    def add_mutually_exclusive_group(self, required=False):
        g = _Group(self._parser, None, None, True, required)
        g._section = self
        self._parser._mutex_groups.append(g)
        return g

    def set_defaults(self, **kwargs):
        self._parser.set_defaults(**kwargs)


class ArgumentParser:
    def __init__(self, prog=None, usage=None, description=None, epilog=None, parents=[], formatter_class=HelpFormatter,
                 prefix_chars="-", fromfile_prefix_chars=None, argument_default=None, conflict_handler="error",
                 add_help=True, allow_abbrev=True, exit_on_error=True):
        if prog is None:
            prog = _basename(sys.argv[0]) if sys.argv else ""
        self.prog = prog
        self.usage = usage
        self.description = description
        self.epilog = epilog
        self.formatter_class = formatter_class
        self.prefix_chars = prefix_chars
        self.argument_default = argument_default
        self.allow_abbrev = allow_abbrev
        self.exit_on_error = exit_on_error
        self._actions = []
        self._option_string_actions = {}
        self._defaults = {}
        self._positionals = _Group(self, "positional arguments", None, False, False)
        self._optionals = _Group(self, "options", None, False, False)
        self._groups = []
        self._mutex_groups = []
        self._has_negative_number_optionals = False
        self._subparsers_action = None
        if add_help:
            self.add_argument("-h", "--help", action="help", default=SUPPRESS, help="show this help message and exit")
        for parent in parents:
            for a in parent._actions:
                if a.kind != "help":
                    self._register(a, None)
            for k, v in parent._defaults.items():
                self._defaults[k] = v

    # ---- adding arguments ----

    def add_argument(self, *args, **kwargs):
        return self._add_action_from(args, kwargs, None)

    def _add_action_from(self, args, kwargs, group):
        chars = self.prefix_chars
        if not args or (len(args) == 1 and args[0][:1] not in chars):
            if args and "dest" in kwargs:
                _raise("ValueError", "dest supplied twice for positional argument")
            dest = args[0] if args else kwargs.get("dest")
            option_strings = []
            if kwargs.get("nargs") not in [OPTIONAL, ZERO_OR_MORE, REMAINDER, SUPPRESS, 0]:
                kwargs["required"] = True
            if kwargs.get("nargs") == ZERO_OR_MORE and "default" not in kwargs:
                kwargs["required"] = True
        else:
            option_strings = []
            long_strings = []
            for s in args:
                if s[:1] not in chars:
                    _raise("ValueError", "invalid option string " + repr(s) + ": must start with a character " + repr(chars))
                option_strings.append(s)
                if len(s) > 1 and s[1] in chars:
                    long_strings.append(s)
            dest = kwargs.pop("dest", None)
            if dest is None:
                first = long_strings[0] if long_strings else option_strings[0]
                dest = first.lstrip(chars)
                if not dest:
                    _raise("ValueError", "dest= is required for options like " + repr(first))
                dest = dest.replace("-", "_")
        kind = kwargs.pop("action", "store")
        if kind is BooleanOptionalAction:
            _kiln_std.refuse("argparse.BooleanOptionalAction is outside Kiln's subset")
        if not isinstance(kind, str):
            _kiln_std.refuse("custom argparse actions are outside Kiln's subset")
        if kind == "extend":
            kind = "append"
        known = ["store", "store_const", "store_true", "store_false", "append", "append_const", "count", "help", "version"]
        if kind not in known:
            _raise("ValueError", "unknown action " + repr(kind))
        if "default" not in kwargs:
            if kind == "store_true":
                kwargs["default"] = False
            elif kind == "store_false":
                kwargs["default"] = True
            elif kind == "help" or kind == "version":
                kwargs["default"] = SUPPRESS
            elif dest in self._defaults:
                kwargs["default"] = self._defaults[dest]
            elif self.argument_default is not None:
                kwargs["default"] = self.argument_default
        if kind == "store_true":
            kwargs["const"] = True
        elif kind == "store_false":
            kwargs["const"] = False
        if kind in _ZERO_ARG_KINDS:
            kwargs["nargs"] = 0
        if kind == "help" or kind == "version":
            kwargs["dest"] = SUPPRESS
            dest = SUPPRESS
        else:
            kwargs.pop("dest", None)
        if kind == "version" and "help" not in kwargs:
            kwargs["help"] = "show program's version number and exit"
        nargs = kwargs.get("nargs")
        if nargs == 0 and kind not in _ZERO_ARG_KINDS:
            _raise("ValueError", "nargs for store actions must be != 0; if you have nothing to store, actions such as store true or store const may be more appropriate")
        tf = kwargs.get("type")
        if tf is not None and not callable(tf):
            _raise("ValueError", repr(tf) + " is not callable")
        kwargs.pop("dest", None)
        action = Action(option_strings, dest, kind, **kwargs)
        self._register(action, group)
        return action

    def _register(self, action, group):
        for s in action.option_strings:
            if s in self._option_string_actions:
                raise ArgumentError(action, "conflicting option string: " + s)
        self._actions.append(action)
        for s in action.option_strings:
            self._option_string_actions[s] = action
            if _is_negative_number(s):
                self._has_negative_number_optionals = True
        section = group
        if group is not None and group._exclusive:
            action.container = group
            section = getattr(group, "_section", None)
        if section is None:
            section = self._optionals if action.option_strings else self._positionals
        action.section = section

    def add_argument_group(self, title=None, description=None, **kwargs):
        g = _Group(self, title, description, False, False)
        self._groups.append(g)
        return g

    def add_mutually_exclusive_group(self, required=False):
        g = _Group(self, None, None, True, required)
        self._mutex_groups.append(g)
        return g

    def add_subparsers(self, title=None, description=None, prog=None, parser_class=None, action=None,
                       dest=SUPPRESS, required=False, help=None, metavar=None):
        if self._subparsers_action is not None:
            self.error("cannot have multiple subparser arguments")
        if action is not None:
            _kiln_std.refuse("custom argparse actions are outside Kiln's subset")
        if prog is None:
            # CPython: the program and the positionals before the subcommand.
            positionals = [a for a in self._actions if not a.option_strings]
            prog = " ".join([s for s in [self.prog] + self._usage_parts(positionals) if s])
        sub = Action([], dest, "parsers", nargs=PARSER, choices={}, required=required, help=help, metavar=metavar)
        sub._prog_prefix = prog
        sub._parser_class = parser_class if parser_class is not None else type(self)
        sub._choices_actions = []
        sub._parent = self
        group = None
        if title is not None or description is not None:
            group = self.add_argument_group(title if title is not None else "subcommands", description)
        self._register(sub, group)
        self._subparsers_action = sub
        return _SubParsers(sub)

    def set_defaults(self, **kwargs):
        for k, v in kwargs.items():
            self._defaults[k] = v
        for a in self._actions:
            if a.dest in kwargs:
                a.default = kwargs[a.dest]

    def get_default(self, dest):
        for a in self._actions:
            if a.dest == dest and a.default is not None:
                return a.default
        return self._defaults.get(dest, None)

    # ---- errors and exits ----

    def exit(self, status=0, message=None):
        if message:
            sys.stderr.write(message)
        sys.exit(status)

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(2, self.prog + ": error: " + message + "\n")

    def _argument_error(self, action, message):
        raise ArgumentError(action, message)

    # ---- parsing ----

    def parse_args(self, args=None, namespace=None):
        args, argv = self.parse_known_args(args, namespace)
        if argv:
            self.error("unrecognized arguments: " + " ".join(argv))
        return args

    def parse_intermixed_args(self, args=None, namespace=None):
        return self.parse_args(args, namespace)

    def parse_known_args(self, args=None, namespace=None):
        if args is None:
            args = sys.argv[1:]
        else:
            args = list(args)
        if namespace is None:
            namespace = Namespace()
        for action in self._actions:
            if action.dest != SUPPRESS and not hasattr(namespace, action.dest) and action.default != SUPPRESS:
                setattr(namespace, action.dest, action.default)
        for dest, value in self._defaults.items():
            if not hasattr(namespace, dest):
                setattr(namespace, dest, value)
        if not self.exit_on_error:
            namespace, extras = self._parse_known_args(args, namespace)
        else:
            try:
                namespace, extras = self._parse_known_args(args, namespace)
            except ArgumentError as err:
                self.error(str(err))
        if hasattr(namespace, "_unrecognized_args"):
            extras.extend(namespace._unrecognized_args)
            delattr(namespace, "_unrecognized_args")
        return namespace, extras

    def _parse_optional(self, arg_string):
        chars = self.prefix_chars
        if not arg_string or arg_string[0] not in chars:
            return None
        if arg_string in self._option_string_actions:
            return (self._option_string_actions[arg_string], arg_string, None)
        if len(arg_string) == 1:
            return None
        if "=" in arg_string:
            option_string, explicit_arg = arg_string.split("=", 1)
            if option_string in self._option_string_actions:
                return (self._option_string_actions[option_string], option_string, explicit_arg)
        option_tuples = self._get_option_tuples(arg_string)
        if len(option_tuples) > 1:
            options = ", ".join([t[1] for t in option_tuples])
            self.error("ambiguous option: " + arg_string + " could match " + options)
        elif len(option_tuples) == 1:
            return option_tuples[0]
        if _is_negative_number(arg_string):
            if not self._has_negative_number_optionals:
                return None
        if " " in arg_string:
            return None
        return (None, arg_string, None)

    def _get_option_tuples(self, option_string):
        result = []
        chars = self.prefix_chars
        if option_string[0] in chars and option_string[1] in chars:
            if self.allow_abbrev:
                if "=" in option_string:
                    option_prefix, explicit_arg = option_string.split("=", 1)
                else:
                    option_prefix = option_string
                    explicit_arg = None
                for s, action in self._option_string_actions.items():
                    if s.startswith(option_prefix):
                        result.append((action, s, explicit_arg))
        elif option_string[0] in chars and option_string[1] not in chars:
            short_prefix = option_string[:2]
            short_explicit = option_string[2:]
            for s, action in self._option_string_actions.items():
                if s == short_prefix:
                    result.append((action, s, short_explicit))
                elif s.startswith(option_string):
                    result.append((action, s, None))
        return result

    def _parse_known_args(self, arg_strings, namespace):
        conflicts = {}
        for g in self._mutex_groups:
            for a in g._group_actions:
                others = [b for b in g._group_actions if b is not a]
                conflicts[_ident(a)] = conflicts.get(_ident(a), []) + others
        option_string_indices = {}
        pattern = ""
        i = 0
        while i < len(arg_strings):
            s = arg_strings[i]
            if s == "--":
                pattern += "-"
                i += 1
                while i < len(arg_strings):
                    pattern += "A"
                    i += 1
                break
            t = self._parse_optional(s)
            if t is None:
                pattern += "A"
            else:
                option_string_indices[i] = t
                pattern += "O"
            i += 1
        state = _ParseState(self, namespace, arg_strings, pattern, option_string_indices, conflicts)
        start_index = 0
        max_index = max(option_string_indices.keys()) if option_string_indices else -1
        while start_index <= max_index:
            next_index = min([k for k in option_string_indices.keys() if k >= start_index])
            if start_index != next_index:
                end = state.consume_positionals(start_index)
                if end > start_index:
                    start_index = end
                    continue
                start_index = end
            if start_index not in option_string_indices:
                state.extras.extend(arg_strings[start_index:next_index])
                start_index = next_index
            start_index = state.consume_optional(start_index)
        stop_index = state.consume_positionals(start_index)
        state.extras.extend(arg_strings[stop_index:])
        required = []
        for action in self._actions:
            if _ident(action) not in state.seen:
                if action.required:
                    required.append(_action_name(action))
                elif (action.default is not None and isinstance(action.default, str) and action.dest != SUPPRESS and
                      hasattr(namespace, action.dest) and action.default is getattr(namespace, action.dest)):
                    setattr(namespace, action.dest, self._get_value(action, action.default))
        if required:
            self.error("the following arguments are required: " + ", ".join(required))
        for g in self._mutex_groups:
            if g.required:
                found = False
                for a in g._group_actions:
                    if _ident(a) in state.seen_non_default:
                        found = True
                if not found:
                    names = [_action_name(a) for a in g._group_actions if a.help != SUPPRESS]
                    self.error("one of the arguments " + " ".join(names) + " is required")
        return namespace, state.extras

    def _get_values(self, action, arg_strings):
        if action.nargs != PARSER and action.nargs != REMAINDER and "--" in arg_strings:
            arg_strings = list(arg_strings)
            arg_strings.remove("--")
        if not arg_strings and action.nargs == OPTIONAL:
            value = action.const if action.option_strings else action.default
            if isinstance(value, str):
                value = self._get_value(action, value)
                self._check_value(action, value)
        elif not arg_strings and action.nargs == ZERO_OR_MORE and not action.option_strings:
            value = action.default if action.default is not None else arg_strings
            if not isinstance(value, list):
                self._check_value(action, value)
        elif len(arg_strings) == 1 and (action.nargs is None or action.nargs == OPTIONAL):
            value = self._get_value(action, arg_strings[0])
            self._check_value(action, value)
        elif action.nargs == REMAINDER:
            value = [self._get_value(action, v) for v in arg_strings]
        elif action.nargs == PARSER:
            value = [self._get_value(action, v) for v in arg_strings]
            self._check_value(action, value[0])
        else:
            value = [self._get_value(action, v) for v in arg_strings]
            for v in value:
                self._check_value(action, v)
        return value

    def _get_value(self, action, arg_string):
        tf = action.type
        if tf is None or tf is str:
            return arg_string
        invalid = "invalid " + getattr(tf, "__name__", repr(tf)) + " value: " + repr(arg_string)
        if tf is int and not _valid_int(arg_string) or tf is float and not _valid_float(arg_string):
            raise ArgumentError(action, invalid)
        try:
            return tf(arg_string)
        except ArgumentTypeError as err:
            raise ArgumentError(action, str(err))
        except (TypeError, ValueError):
            raise ArgumentError(action, invalid)

    def _check_value(self, action, value):
        if action.choices is not None and value not in action.choices:
            choices = ", ".join([repr(c) for c in action.choices])
            self._argument_error(action, "invalid choice: " + repr(value) + " (choose from " + choices + ")")

    # ---- help ----

    def _sections(self):
        out = [self._positionals, self._optionals]
        for g in self._groups:
            out.append(g)
        return out

    def _section_actions(self, section):
        return [a for a in self._actions if a.section is section and a.help != SUPPRESS]

    def format_usage(self):
        return "usage: " + self._usage_text() + "\n"

    def _usage_text(self):
        prog = self.prog
        if self.usage is not None:
            return self.usage.replace("%(prog)s", prog)
        optionals = [a for a in self._actions if a.option_strings]
        positionals = [a for a in self._actions if not a.option_strings]
        opt_parts = self._usage_parts(optionals)
        pos_parts = self._usage_parts(positionals)
        usage = " ".join([s for s in [prog] + opt_parts + pos_parts if s])
        text_width = _WIDTH
        prefix = "usage: "
        if len(prefix) + len(usage) > text_width:
            if len(prefix) + len(prog) <= 0.75 * text_width:
                indent = " " * (len(prefix) + len(prog) + 1)
                if opt_parts:
                    lines = _usage_lines([prog] + opt_parts, indent, prefix, text_width)
                    lines.extend(_usage_lines(pos_parts, indent, None, text_width))
                elif pos_parts:
                    lines = _usage_lines([prog] + pos_parts, indent, prefix, text_width)
                else:
                    lines = [prog]
            else:
                indent = " " * len(prefix)
                parts = opt_parts + pos_parts
                lines = _usage_lines(parts, indent, None, text_width)
                if len(lines) > 1:
                    lines = []
                    lines.extend(_usage_lines(opt_parts, indent, None, text_width))
                    lines.extend(_usage_lines(pos_parts, indent, None, text_width))
                lines = [prog] + lines
            usage = "\n".join(lines)
        return usage

    def _usage_parts(self, actions):
        parts = []
        done = {}
        for action in actions:
            if action.help == SUPPRESS:
                continue
            group = action.container
            if group is not None:
                if _ident(group) in done:
                    continue
                done[_ident(group)] = True
                members = [a for a in group._group_actions if a.help != SUPPRESS and (len(a.option_strings) > 0) == (len(action.option_strings) > 0)]
                inner = " | ".join([_action_usage(a) for a in members])
                if len(members) == 1 and not group.required:
                    parts.append("[" + inner + "]")
                elif group.required:
                    parts.append("(" + inner + ")")
                else:
                    parts.append("[" + inner + "]")
                continue
            part = _action_usage(action)
            if action.option_strings and not action.required:
                part = "[" + part + "]"
            parts.append(part)
        return parts

    def format_help(self):
        out = "usage: " + self._usage_text() + "\n\n"
        raw = self.formatter_class is RawDescriptionHelpFormatter or self.formatter_class is RawTextHelpFormatter
        if self.description:
            out += _fill(self.description, _WIDTH, "", raw) + "\n\n"
        invocations = []
        for section in self._sections():
            for a in self._section_actions(section):
                invocations.append(len(_action_invocation(a)) + 2)
                for sub in _subactions(a):
                    invocations.append(len(_action_invocation(sub)) + 4)
        max_length = max(invocations) if invocations else 0
        for section in self._sections():
            actions = self._section_actions(section)
            if not actions and not section.description:
                continue
            out += section.title + ":\n"
            if section.description:
                out += _fill(section.description, _WIDTH - 2, "  ", raw) + "\n\n"
            for a in actions:
                out += self._format_action(a, max_length)
                for sub in _subactions(a):
                    out += self._format_action(sub, max_length, 4)
            out += "\n"
        if self.epilog:
            out += _fill(self.epilog, _WIDTH, "", raw) + "\n"
        while "\n\n\n" in out:
            out = out.replace("\n\n\n", "\n\n")
        return out.strip("\n") + "\n"

    def _format_action(self, action, max_length, indent=2):
        help_position = min(max_length + 2, _MAX_HELP_POSITION)
        help_width = max(_WIDTH - help_position, 11)
        action_width = help_position - indent - 2
        header = _action_invocation(action)
        help_text = self._expand_help(action) if action.help else None
        if not help_text:
            return " " * indent + header + "\n"
        if len(header) <= action_width:
            line = " " * indent + header + " " * (action_width - len(header)) + "  "
            indent_first = 0
        else:
            line = " " * indent + header + "\n"
            indent_first = help_position
        if self.formatter_class is RawTextHelpFormatter:
            lines = help_text.split("\n")
        else:
            lines = _wrap(help_text, help_width)
        if not lines:
            return line + "\n"
        out = line + " " * indent_first + lines[0] + "\n"
        for l in lines[1:]:
            out += " " * help_position + l + "\n"
        return out

    def _expand_help(self, action):
        text = action.help
        if self.formatter_class is ArgumentDefaultsHelpFormatter:
            if "%(default)" not in text and action.default != SUPPRESS:
                if action.option_strings or action.nargs == OPTIONAL or action.nargs == ZERO_OR_MORE:
                    text += " (default: %(default)s)"
        if "%" not in text:
            return text
        params = {}
        for name in ["option_strings", "dest", "nargs", "const", "default", "type", "choices", "required", "help", "metavar"]:
            value = getattr(action, name)
            if value == SUPPRESS:
                continue
            if value is not None and hasattr(value, "__name__") and not isinstance(value, str):
                value = value.__name__
            params[name] = value
        params["prog"] = self.prog
        if params.get("choices") is not None:
            params["choices"] = ", ".join([str(c) for c in params["choices"]])
        return text % params

    def print_usage(self, file=None):
        (sys.stdout if file is None else file).write(self.format_usage())

    def print_help(self, file=None):
        (sys.stdout if file is None else file).write(self.format_help())

    def convert_arg_line_to_args(self, arg_line):
        return [arg_line]


class _ParseState:
    def __init__(self, parser, namespace, arg_strings, pattern, option_string_indices, conflicts):
        self.parser = parser
        self.namespace = namespace
        self.arg_strings = arg_strings
        self.pattern = pattern
        self.indices = option_string_indices
        self.conflicts = conflicts
        self.extras = []
        self.seen = {}
        self.seen_non_default = {}
        self.positionals = [a for a in parser._actions if not a.option_strings]

    def take_action(self, action, argument_strings, option_string=None):
        self.seen[_ident(action)] = True
        values = self.parser._get_values(action, argument_strings)
        if values is not action.default:
            self.seen_non_default[_ident(action)] = True
            for other in self.conflicts.get(_ident(action), []):
                if _ident(other) in self.seen_non_default:
                    self.parser._argument_error(action, "not allowed with argument " + _action_name(other))
        if values != SUPPRESS:
            _perform(self.parser, action, self.namespace, values, option_string)

    def consume_optional(self, start_index):
        action, option_string, explicit_arg = self.indices[start_index]
        chars = self.parser.prefix_chars
        todo = []
        while True:
            if action is None:
                self.extras.append(self.arg_strings[start_index])
                return start_index + 1
            if explicit_arg is not None:
                arg_count = _optional_count(action, "A")
                if arg_count == 0 and option_string[1] not in chars and explicit_arg != "":
                    todo.append((action, [], option_string))
                    option_string = option_string[0] + explicit_arg[0]
                    new_explicit = explicit_arg[1:]
                    if new_explicit == "":
                        new_explicit = None
                    if option_string in self.parser._option_string_actions:
                        action = self.parser._option_string_actions[option_string]
                        explicit_arg = new_explicit
                    else:
                        self.parser._argument_error(action, "ignored explicit argument " + repr(explicit_arg))
                elif arg_count == 1:
                    stop = start_index + 1
                    todo.append((action, [explicit_arg], option_string))
                    break
                else:
                    self.parser._argument_error(action, "ignored explicit argument " + repr(explicit_arg))
            else:
                start = start_index + 1
                arg_count = _optional_count(action, self.pattern[start:])
                if arg_count < 0:
                    self.parser._argument_error(action, _nargs_error(action.nargs))
                stop = start + arg_count
                todo.append((action, self.arg_strings[start:stop], option_string))
                break
        for a, args, opt in todo:
            self.take_action(a, args, opt)
        return stop

    def consume_positionals(self, start_index):
        counts = _match_partial([a.nargs for a in self.positionals], self.pattern[start_index:])
        for i in range(len(counts)):
            action = self.positionals[i]
            args = self.arg_strings[start_index:start_index + counts[i]]
            start_index += counts[i]
            self.take_action(action, args)
        self.positionals = self.positionals[len(counts):]
        return start_index


class _SubParsers:
    # What add_subparsers returns: CPython's _SubParsersAction, whose
    # add_parser makes a parser per subcommand.
    def __init__(self, action):
        self._action = action

    def add_parser(self, name, help=None, aliases=(), **kwargs):
        action = self._action
        if "prog" not in kwargs:
            kwargs["prog"] = action._prog_prefix + " " + name
        for n in [name] + list(aliases):
            if n in action.choices:
                raise ArgumentError(action, "conflicting subparser: " + n)
        parser = action._parser_class(**kwargs)
        if help is not None:
            metavar = name
            if aliases:
                metavar += " (" + ", ".join(aliases) + ")"
            action._choices_actions.append(Action([], name, "store", help=help, metavar=metavar))
        action.choices[name] = parser
        for alias in aliases:
            action.choices[alias] = parser
        return parser

    def _get_subactions(self):
        return self._action._choices_actions

    def __getattr__(self, name):
        return getattr(self._action, name)


def _subactions(action):
    if action.kind == "parsers":
        return action._choices_actions
    return []


def _nargs_error(nargs):
    if nargs is None:
        return "expected one argument"
    if nargs == OPTIONAL:
        return "expected at most one argument"
    if nargs == ONE_OR_MORE:
        return "expected at least one argument"
    return "expected " + str(nargs) + " argument" + ("" if nargs == 1 else "s")


def _optional_count(action, pattern):
    # How many arguments an option takes from `pattern` (its nargs, without
    # crossing an option or '--'); -1 when it cannot have enough.
    avail = 0
    while avail < len(pattern) and pattern[avail] == "A":
        avail += 1
    nargs = action.nargs
    if nargs is None:
        return 1 if avail >= 1 else -1
    if nargs == OPTIONAL:
        return min(avail, 1)
    if nargs == ZERO_OR_MORE:
        return avail
    if nargs == ONE_OR_MORE:
        return avail if avail >= 1 else -1
    if nargs == REMAINDER:
        return len(pattern)
    return nargs if avail >= nargs else -1


def _group_ok(nargs, s):
    if nargs == PARSER:
        # CPython's pattern -*A[-AO]*: the subcommand, then everything after it.
        t = s.lstrip("-")
        return len(t) > 0 and t[0] == "A"
    if "O" in s:
        return nargs == REMAINDER
    n = 0
    for c in s:
        if c == "A":
            n += 1
    if nargs is None:
        return n == 1
    if nargs == OPTIONAL:
        return n <= 1
    if nargs == ZERO_OR_MORE or nargs == REMAINDER:
        return True
    if nargs == ONE_OR_MORE:
        return n >= 1
    return n == nargs


def _match_seq(nargs_list, pattern, pos):
    # Regex-like greedy matching of the positionals' patterns from `pos`:
    # each takes as much as it can while the rest can still match.
    if not nargs_list:
        return []
    nargs = nargs_list[0]
    length = len(pattern) - pos
    while length >= 0:
        if _group_ok(nargs, pattern[pos:pos + length]):
            rest = _match_seq(nargs_list[1:], pattern, pos + length)
            if rest is not None:
                return [length] + rest
        length -= 1
    return None


def _match_partial(nargs_list, pattern):
    i = len(nargs_list)
    while i > 0:
        counts = _match_seq(nargs_list[:i], pattern, 0)
        if counts is not None:
            return counts
        i -= 1
    return []


def _perform(parser, action, namespace, values, option_string):
    kind = action.kind
    if kind == "store":
        setattr(namespace, action.dest, values)
    elif kind == "store_const" or kind == "store_true" or kind == "store_false":
        setattr(namespace, action.dest, action.const)
    elif kind == "append":
        items = getattr(namespace, action.dest, None)
        items = [] if items is None else list(items)
        if isinstance(values, list) and action.nargs != None and action.nargs != OPTIONAL:
            items.append(values)
        else:
            items.append(values)
        setattr(namespace, action.dest, items)
    elif kind == "append_const":
        items = getattr(namespace, action.dest, None)
        items = [] if items is None else list(items)
        items.append(action.const)
        setattr(namespace, action.dest, items)
    elif kind == "count":
        count = getattr(namespace, action.dest, None)
        if count is None:
            count = 0
        setattr(namespace, action.dest, count + 1)
    elif kind == "parsers":
        name = values[0]
        if action.dest != SUPPRESS:
            setattr(namespace, action.dest, name)
        if name not in action.choices:
            choices = ", ".join(action.choices)
            raise ArgumentError(action, "unknown parser " + repr(name) + " (choices: " + choices + ")")
        # As CPython 3.11: the subparser's values (its defaults too) override the parent's.
        subnamespace, extras = action.choices[name].parse_known_args(values[1:], None)
        for key, value in vars(subnamespace).items():
            setattr(namespace, key, value)
        if extras:
            if not hasattr(namespace, "_unrecognized_args"):
                namespace._unrecognized_args = []
            namespace._unrecognized_args.extend(extras)
    elif kind == "help":
        parser.print_help()
        parser.exit()
    elif kind == "version":
        sys.stdout.write(action.version.replace("%(prog)s", parser.prog) + "\n")
        parser.exit()


def _metavars(action, default, n):
    if action.metavar is not None:
        result = action.metavar
    elif action.choices is not None:
        result = "{" + ",".join([str(c) for c in action.choices]) + "}"
    else:
        result = default
    if isinstance(result, tuple):
        return list(result)
    return [result] * n


def _format_args(action, default):
    nargs = action.nargs
    if nargs is None:
        return _metavars(action, default, 1)[0]
    if nargs == OPTIONAL:
        return "[" + _metavars(action, default, 1)[0] + "]"
    if nargs == ZERO_OR_MORE:
        m = _metavars(action, default, 1)
        if len(m) == 2:
            return "[" + m[0] + " [" + m[1] + " ...]]"
        return "[" + m[0] + " ...]"
    if nargs == ONE_OR_MORE:
        m = _metavars(action, default, 2)
        return m[0] + " [" + m[1] + " ...]"
    if nargs == REMAINDER:
        return "..."
    if nargs == PARSER:
        return _metavars(action, default, 1)[0] + " ..."
    if nargs == SUPPRESS:
        return ""
    return " ".join(_metavars(action, default, nargs))


def _action_usage(action):
    if not action.option_strings:
        return _format_args(action, action.dest)
    if action.nargs == 0:
        return action.option_strings[0]
    return action.option_strings[0] + " " + _format_args(action, action.dest.upper())


def _action_invocation(action):
    if not action.option_strings:
        return _metavars(action, action.dest, 1)[0]
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    args = _format_args(action, action.dest.upper())
    return ", ".join([s + " " + args for s in action.option_strings])


def _action_name(action):
    if action.option_strings:
        return "/".join(action.option_strings)
    if action.metavar is not None and action.metavar != SUPPRESS:
        return action.metavar if not isinstance(action.metavar, tuple) else action.metavar[0]
    if action.dest is not None and action.dest != SUPPRESS:
        return action.dest
    if action.choices:
        return "{" + ",".join([str(c) for c in action.choices]) + "}"
    return None


def _usage_lines(parts, indent, prefix, text_width):
    lines = []
    line = []
    indent_length = len(indent)
    if prefix is not None:
        line_len = len(prefix) - 1
    else:
        line_len = indent_length - 1
    for part in parts:
        if line_len + 1 + len(part) > text_width and line:
            lines.append(indent + " ".join(line))
            line = []
            line_len = indent_length - 1
        line.append(part)
        line_len += len(part) + 1
    if line:
        lines.append(indent + " ".join(line))
    if prefix is not None:
        lines[0] = lines[0][len(indent):]
    return lines


def _fill(text, width, indent, raw):
    if raw:
        return "\n".join([indent + l for l in text.split("\n")])
    return "\n".join([indent + l for l in _wrap(text, width - len(indent) if indent else width)])
)PY";

}  // namespace

KILN_STDLIB_SOURCE(load_argparse, kArgparseSource, "argparse.py")

}  // namespace kiln::py
