"""The dangerous-command guard: commands that ask even in auto mode.

A documented list of patterns over the whole command line (every segment of a pipeline or a
`;`/`&&` chain), not a first-word prefix match. Each entry says why it is dangerous; the reason is
shown to the person who approves and to the model when refused.
"""

from __future__ import annotations

import re

_TARGET = r"(?:/|~|\$HOME|\$\{HOME\}|\.|\./|\*|/\*|~/\*|\.\.|/(?:etc|usr|bin|boot|var|lib|home|root|sys|dev)\S*)"

DANGEROUS: list[tuple[str, str]] = [
    (rf"\brm\s+(?:-\S*\s+)*-\S*[rR]\S*\s+(?:-\S+\s+)*(?:--\s+)?['\"]?{_TARGET}['\"]?(?:\s|$|;|&|\|)",
     "recursive delete of the project, home or root"),
    (rf"\brm\s+(?:-\S+\s+)*--recursive\b.*\s['\"]?{_TARGET}['\"]?(?:\s|$)", "recursive delete of the project, home or root"),
    (r"\brm\s+.*--no-preserve-root", "rm with --no-preserve-root"),
    (r"\b(?:curl|wget|fetch)\b[^|;&]*\|\s*(?:sudo\s+)?(?:ba|z|k|da|fi)?sh\b", "downloads a script and pipes it to a shell"),
    (r"\b(?:curl|wget)\b[^|;&]*\|\s*(?:sudo\s+)?(?:python\d?|perl|ruby|node)\b", "downloads code and pipes it to an interpreter"),
    (r"\b(?:ba|z)?sh\s+-c\s+['\"]?\$\((?:curl|wget)", "runs a downloaded script"),
    (r"\bdd\b[^;&|]*\bof=/dev/", "dd writing to a device"),
    (r"\bmkfs(?:\.\w+)?\b", "formats a file system"),
    (r">\s*/dev/(?:sd|nvme|hd|xvd|vd|disk)\w*", "writes straight to a disk device"),
    (r"\bgit\s+push\b[^;&|]*(?:\s--force\b|\s-f\b|\s--force-with-lease\b|\s\+\S+)", "force push"),
    (r":\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:", "fork bomb"),
    (r"\b(?:chmod|chown|chgrp)\s+(?:-\S*\s+)*-\S*R\S*\s+(?:\S+\s+)?(?:/|/(?:etc|usr|bin|boot|var|lib|home|root|sys)\S*|~)(?:\s|$)",
     "recursive permission change on a system path"),
    (r"\bgit\s+reset\s+--hard\b", "discards uncommitted work (git reset --hard)"),
    (r"\bgit\s+clean\s+-\S*f", "deletes untracked files (git clean -f)"),
    (r"\b(?:shutdown|reboot|halt|poweroff)\b", "shuts down or reboots the machine"),
    (r"\bsudo\b", "runs with root privileges"),
    (r">\s*~?/?\.(?:bashrc|zshrc|profile|ssh/\S*)\b", "overwrites a shell profile or SSH file"),
]

_COMPILED = [(re.compile(p), why) for p, why in DANGEROUS]


def dangerous_reason(command: str) -> str:
    """Why `command` is dangerous, or "" when it is not on the list."""
    for pattern, why in _COMPILED:
        if pattern.search(command):
            return why
    return ""
