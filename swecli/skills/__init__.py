"""Agent Skills: folders with a SKILL.md, listed in the stable prefix, loaded only when used.

- `catalog`: discovery in the skill folders (project and user, swecli's and other tools'), parsing,
  warnings, and the `name: description` catalog for the system prompt (within a token budget)
- `loading`: the `skill` tool, `/skill-name`'s message, and the compaction pin that re-attaches a
  loaded skill after compaction
"""
