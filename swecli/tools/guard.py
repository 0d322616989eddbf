"""The dangerous-command guard: commands that ask even in auto mode.

A documented list of patterns over the whole command line (every segment of a pipeline or a
`;`/`&&` chain), not a first-word prefix match. Each entry says why it is dangerous; the reason is
shown to the person who approves and to the model when refused. Words common in arguments and
messages (`shutdown`, `sudo`, `mkfs`) only count in command position, so `grep -rn shutdown src/`
or a commit message does not ask; rm is matched anywhere (asking once too often is the cheap error).
"""

from __future__ import annotations

import re

_HOME = r"(?:~|\$HOME|\$\{HOME\})"
_SYSTEM = r"(?:etc|usr|bin|sbin|boot|var|lib|lib64|opt|root|sys|proc|dev|srv|mnt)"
# What a recursive rm must not be pointed at: root, a system directory, /home or a user's home, the home
# directory or its top-level dotfiles, the current or parent directory, or "everything here" (*).
# `build/`, `/tmp/x` and `/home/me/project/dist` are deliberately not on the list.
_RM_TARGET = (rf"(?:{_HOME}(?:/\*?|/\.[^\s/'\"]*)?|\.\.?(?:/\*?)?|\.\*|\*|/\*?|/{_SYSTEM}(?:/\S*)?"
              r"|/home(?:/[^\s/'\"]+)?/?)")
_SYSTEM_TARGET = rf"(?:{_HOME}/?|/\*?|/{_SYSTEM}(?:/\S*)?|/home(?:/[^\s/'\"]+)?/?)"
_END = r"['\"]?(?=$|[\s;&|)])"
_SEGMENT = r"[^;&|\n]*"  # the rest of one command: stops at ; & | and newlines
# The start of a command (not an argument): line start or after ; & | ( ` $( , then optional
# VAR=value assignments and wrappers like sudo/env/nohup. Used where the word alone is too common.
_CMD = (r"(?:^|[;&|(`\n]|\$\()\s*(?:\w+=\S*\s+)*"
        r"(?:(?:env|nohup|exec|time|nice|command|xargs|sudo|doas)(?:\s+-\S+)*\s+(?:\w+=\S*\s+)*)*")

DANGEROUS: list[tuple[str, str]] = [
    (rf"\brm\b(?={_SEGMENT}\s-(?:[a-zA-Z]*[rR]|-recursive\b)){_SEGMENT}\s['\"]?{_RM_TARGET}{_END}",
     "recursive delete of the project, home or root"),
    (r"\brm\s+.*--no-preserve-root", "rm with --no-preserve-root"),
    (r"\b(?:curl|wget|fetch)\b[^|;&]*\|\s*(?:sudo\s+)?(?:ba|z|k|da|fi)?sh\b", "downloads a script and pipes it to a shell"),
    (r"\b(?:curl|wget)\b[^|;&]*\|\s*(?:sudo\s+)?(?:python\d?|perl|ruby|node)\b", "downloads code and pipes it to an interpreter"),
    (r"\b(?:ba|z)?sh\s+-c\s+['\"]?\$\((?:curl|wget)", "runs a downloaded script"),
    (r"(?:\b(?:ba|z)?sh|\bsource|(?:^|[;&|]\s*)\.)\s+<\(\s*(?:curl|wget)\b", "runs a downloaded script"),
    (r"\bdd\b[^;&|]*\bof=/dev/(?!(?:null|zero|stdout|stderr|tty)\b)", "dd writing to a device"),
    (rf"{_CMD}mkfs(?:\.\w+)?\b", "formats a file system"),
    (r">\s*/dev/(?:sd|nvme|hd|xvd|vd|disk)\w*", "writes straight to a disk device"),
    (r"\bgit\s+push\b[^;&|]*(?:\s--force\b|\s-f\b|\s--force-with-lease\b|\s\+\S+)", "force push"),
    (r"(?:^|[\s;&|])(\w+|:)\s*\(\)\s*\{\s*\1\s*\|\s*\1\s*&", "fork bomb"),
    (rf"\b(?:chmod|chown|chgrp)\b(?={_SEGMENT}\s-(?:[a-zA-Z]*R|-recursive\b)){_SEGMENT}\s['\"]?{_SYSTEM_TARGET}{_END}",
     "recursive permission change on a system path"),
    (r"\bgit\s+reset\s+--hard\b", "discards uncommitted work (git reset --hard)"),
    (rf"\bgit\s+clean\b(?={_SEGMENT}\s(?:-[a-zA-Z]*f|--force\b))", "deletes untracked files (git clean -f)"),
    (rf"{_CMD}(?:shutdown|reboot|halt|poweroff)\b|\bsystemctl\s+(?:reboot|poweroff|halt|kexec)\b",
     "shuts down or reboots the machine"),
    (rf"{_CMD}(?:sudo|doas|pkexec)\b", "runs with root privileges"),
    (rf">\s*(?:{_HOME}/|/)?\.(?:bashrc|bash_profile|zshrc|zprofile|profile|ssh/\S*)\b",
     "overwrites a shell profile or SSH file"),
]

_COMPILED = [(re.compile(p), why) for p, why in DANGEROUS]


def dangerous_reason(command: str) -> str:
    """Why `command` is dangerous, or "" when it is not on the list."""
    for pattern, why in _COMPILED:
        if pattern.search(command):
            return why
    return ""
