"""Three MCP servers for `bench/mcp_bench.py`, 20 tools each, written with the SDK's low-level Server.

    python bench/mcp_servers.py github|files|database

The tools mirror the shape of popular real servers (GitHub's, the filesystem server, a Postgres
server): a sentence or three of description and typed, described parameters, so their schemas
weigh what real ones do (a few hundred tokens each). Every call answers with a short JSON echo.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool, ToolAnnotations

P = dict[str, tuple[str, str]]
"""parameter -> (JSON type, description)"""

REPO: P = {"owner": ("string", "Repository owner (user or organization login)."),
           "repo": ("string", "Repository name, without the owner.")}
PAGE: P = {"page": ("integer", "Page number of the results to fetch (1-based)."),
           "per_page": ("integer", "Results per page, at most 100.")}
PATH: P = {"path": ("string", "Path of the file or directory, absolute or relative to an allowed root.")}
SQL: P = {"database": ("string", "Name of the database to use (defaults to the connection's database)."),
          "schema": ("string", "Schema that contains the object (default: public).")}

SERVERS: dict[str, list[tuple[str, str, P, bool]]] = {
    "github": [
        ("create_issue", "Create a new issue in a GitHub repository. Use labels and assignees to route it.",
         {**REPO, "title": ("string", "Issue title."), "body": ("string", "Issue body in Markdown."),
          "assignees": ("array", "Logins to assign."), "labels": ("array", "Labels to apply."),
          "milestone": ("integer", "Milestone number to associate.")}, False),
        ("get_issue", "Get the details of one issue: title, body, state, labels, assignees and timestamps.",
         {**REPO, "issue_number": ("integer", "The issue number.")}, True),
        ("list_issues", "List issues in a repository, filtered by state, labels, assignee or creation date.",
         {**REPO, "state": ("string", "open, closed or all."), "labels": ("array", "Only issues with these labels."),
          "sort": ("string", "created, updated or comments."), "direction": ("string", "asc or desc."),
          "since": ("string", "ISO 8601 timestamp: only issues updated after it."), **PAGE}, True),
        ("update_issue", "Update an existing issue: title, body, state, labels, assignees or milestone.",
         {**REPO, "issue_number": ("integer", "The issue number."), "title": ("string", "New title."),
          "body": ("string", "New body."), "state": ("string", "open or closed."),
          "labels": ("array", "Replacement labels."), "assignees": ("array", "Replacement assignees.")}, False),
        ("add_issue_comment", "Add a comment to an issue or pull request.",
         {**REPO, "issue_number": ("integer", "Issue or pull request number."),
          "body": ("string", "Comment text in Markdown.")}, False),
        ("search_issues", "Search issues and pull requests across GitHub with the issue search syntax.",
         {"q": ("string", "Search query, e.g. 'repo:o/r is:open label:bug'."),
          "sort": ("string", "comments, reactions, created or updated."), "order": ("string", "asc or desc."),
          **PAGE}, True),
        ("create_pull_request", "Open a pull request from a head branch into a base branch.",
         {**REPO, "title": ("string", "Pull request title."), "body": ("string", "Description in Markdown."),
          "head": ("string", "Branch with the changes."), "base": ("string", "Branch to merge into."),
          "draft": ("boolean", "Open as a draft."), "maintainer_can_modify": ("boolean", "Allow edits.")}, False),
        ("get_pull_request", "Get a pull request: title, body, branches, mergeability, review state.",
         {**REPO, "pull_number": ("integer", "The pull request number.")}, True),
        ("list_pull_requests", "List the pull requests of a repository, filtered by state and branches.",
         {**REPO, "state": ("string", "open, closed or all."), "head": ("string", "Filter by head user:branch."),
          "base": ("string", "Filter by base branch."), "sort": ("string", "created, updated or popularity."),
          **PAGE}, True),
        ("merge_pull_request", "Merge a pull request with a merge commit, a squash or a rebase.",
         {**REPO, "pull_number": ("integer", "The pull request number."),
          "commit_title": ("string", "Title of the merge commit."), "commit_message": ("string", "Its message."),
          "merge_method": ("string", "merge, squash or rebase.")}, False),
        ("get_pull_request_files", "List the files a pull request changes, with their patches.",
         {**REPO, "pull_number": ("integer", "The pull request number."), **PAGE}, True),
        ("create_pull_request_review", "Review a pull request: approve, request changes or comment.",
         {**REPO, "pull_number": ("integer", "The pull request number."), "body": ("string", "Review text."),
          "event": ("string", "APPROVE, REQUEST_CHANGES or COMMENT."),
          "comments": ("array", "Line comments: path, position and body.")}, False),
        ("get_file_contents", "Get the contents of a file or directory in a repository at a ref.",
         {**REPO, "path": ("string", "Path in the repository."), "ref": ("string", "Branch, tag or commit.")}, True),
        ("create_or_update_file", "Create or update one file in a repository with a commit.",
         {**REPO, "path": ("string", "Path in the repository."), "content": ("string", "New file content."),
          "message": ("string", "Commit message."), "branch": ("string", "Branch to commit to."),
          "sha": ("string", "Blob SHA of the file being replaced, for updates.")}, False),
        ("push_files", "Push several files to a branch in one commit.",
         {**REPO, "branch": ("string", "Branch to push to."), "files": ("array", "Files: path and content."),
          "message": ("string", "Commit message.")}, False),
        ("create_branch", "Create a branch from another branch or a commit.",
         {**REPO, "branch": ("string", "New branch name."), "from_branch": ("string", "Source branch.")}, False),
        ("list_commits", "List the commits of a branch, newest first, optionally for one path or author.",
         {**REPO, "sha": ("string", "Branch or commit to start from."), "path": ("string", "Only commits touching it."),
          "author": ("string", "Only commits by this login or email."), **PAGE}, True),
        ("search_code", "Search code across repositories with GitHub's code search syntax.",
         {"q": ("string", "Search query, e.g. 'TODO repo:o/r language:python'."), **PAGE}, True),
        ("fork_repository", "Fork a repository into your account or an organization.",
         {**REPO, "organization": ("string", "Organization to fork into (default: your account).")}, False),
        ("list_workflow_runs", "List the GitHub Actions workflow runs of a repository.",
         {**REPO, "workflow_id": ("string", "Workflow file name or ID."), "branch": ("string", "Branch filter."),
          "status": ("string", "queued, in_progress, completed, success or failure."), **PAGE}, True),
    ],
    "files": [
        ("read_text_file", "Read the complete contents of a text file. Use head or tail to read only the first "
                           "or last lines of a large file.",
         {**PATH, "head": ("integer", "Only the first N lines."), "tail": ("integer", "Only the last N lines.")}, True),
        ("read_media_file", "Read an image or audio file and return it base64-encoded with its MIME type.",
         PATH, True),
        ("read_multiple_files", "Read several files at once; a file that fails does not stop the others.",
         {"paths": ("array", "Paths of the files to read.")}, True),
        ("write_file", "Create a new file or overwrite an existing one completely. Use with caution.",
         {**PATH, "content": ("string", "The new content of the file.")}, False),
        ("edit_file", "Make line-based edits to a text file: each edit replaces an exact sequence of lines. "
                      "Returns a git-style diff of the changes.",
         {**PATH, "edits": ("array", "Edits: oldText and newText pairs."),
          "dryRun": ("boolean", "Preview the diff without writing.")}, False),
        ("create_directory", "Create a directory, with its parents, or succeed silently if it exists.",
         PATH, False),
        ("list_directory", "List the files and directories in a path, marked [FILE] or [DIR].", PATH, True),
        ("list_directory_with_sizes", "List a directory with the size of each entry, sorted by name or size.",
         {**PATH, "sortBy": ("string", "name or size.")}, True),
        ("directory_tree", "A recursive JSON tree of the files and directories under a path.",
         {**PATH, "excludePatterns": ("array", "Glob patterns to leave out.")}, True),
        ("move_file", "Move or rename a file or directory; fails if the destination exists.",
         {"source": ("string", "Current path."), "destination": ("string", "New path.")}, False),
        ("search_files", "Recursively search for files and directories whose names match a glob pattern.",
         {**PATH, "pattern": ("string", "Glob pattern, e.g. '**/*.py'."),
          "excludePatterns": ("array", "Glob patterns to leave out.")}, True),
        ("get_file_info", "Metadata of a file or directory: size, times, permissions and type.", PATH, True),
        ("list_allowed_directories", "The directories this server may access.", {}, True),
        ("delete_file", "Delete a file. Directories are refused unless recursive is set.",
         {**PATH, "recursive": ("boolean", "Delete a directory and everything in it.")}, False),
        ("copy_file", "Copy a file to a new path; fails if the destination exists unless overwrite is set.",
         {"source": ("string", "File to copy."), "destination": ("string", "New path."),
          "overwrite": ("boolean", "Replace an existing destination.")}, False),
        ("grep_files", "Search file contents under a path for a regular expression; returns path:line:text.",
         {**PATH, "pattern": ("string", "Regular expression."), "include": ("string", "Glob of files to search."),
          "caseSensitive": ("boolean", "Match case."), "maxResults": ("integer", "Stop after N matches.")}, True),
        ("file_diff", "A unified diff between two files.",
         {"left": ("string", "First file."), "right": ("string", "Second file."),
          "context": ("integer", "Lines of context around each change.")}, True),
        ("tail_file", "Follow the end of a growing file for a number of seconds and return what was appended.",
         {**PATH, "seconds": ("integer", "How long to follow.")}, True),
        ("checksum_file", "The SHA-256 (or MD5, SHA-1) checksum of a file.",
         {**PATH, "algorithm": ("string", "sha256, sha1 or md5.")}, True),
        ("compress_files", "Create a zip or tar.gz archive from files and directories.",
         {"paths": ("array", "Files and directories to include."), "archive": ("string", "Archive path."),
          "format": ("string", "zip or tar.gz.")}, False),
    ],
    "database": [
        ("query", "Run a read-only SQL query and return the rows as JSON. Statements that change data are "
                  "refused; use execute for those.",
         {**SQL, "sql": ("string", "The SELECT statement."), "params": ("array", "Bound parameters ($1, $2...)."),
          "limit": ("integer", "Maximum rows to return.")}, True),
        ("execute", "Run a SQL statement that changes data or schema (INSERT, UPDATE, DELETE, DDL) in a "
                    "transaction; returns the affected row count.",
         {**SQL, "sql": ("string", "The statement."), "params": ("array", "Bound parameters.")}, False),
        ("list_schemas", "List the schemas of the database with their owners.", SQL, True),
        ("list_tables", "List the tables and views of a schema with row estimates and sizes.", SQL, True),
        ("describe_table", "Columns, types, defaults, nullability, constraints and indexes of a table.",
         {**SQL, "table": ("string", "Table name.")}, True),
        ("list_indexes", "The indexes of a table with their definitions, sizes and usage counts.",
         {**SQL, "table": ("string", "Table name.")}, True),
        ("explain_query", "Show the query plan of a statement (EXPLAIN, optionally ANALYZE) as JSON.",
         {**SQL, "sql": ("string", "The statement to explain."),
          "analyze": ("boolean", "Run it to get real timings (careful with writes).")}, True),
        ("list_extensions", "Installed and available extensions with their versions.", SQL, True),
        ("table_stats", "Live and dead tuples, sequential and index scans, last vacuum and analyze of a table.",
         {**SQL, "table": ("string", "Table name.")}, True),
        ("slow_queries", "The slowest statements from pg_stat_statements, by total or mean time.",
         {**SQL, "order_by": ("string", "total_time or mean_time."), "limit": ("integer", "How many.")}, True),
        ("active_connections", "Current sessions: user, application, state, query and how long it runs.",
         SQL, True),
        ("kill_connection", "Terminate a backend by process ID.",
         {**SQL, "pid": ("integer", "Backend process ID.")}, False),
        ("create_index", "Create an index (concurrently by default) on columns of a table.",
         {**SQL, "table": ("string", "Table name."), "columns": ("array", "Columns to index."),
          "unique": ("boolean", "A unique index."), "method": ("string", "btree, hash, gin or gist.")}, False),
        ("vacuum_table", "VACUUM (optionally FULL and ANALYZE) a table.",
         {**SQL, "table": ("string", "Table name."), "full": ("boolean", "VACUUM FULL (locks the table)."),
          "analyze": ("boolean", "Also update statistics.")}, False),
        ("list_roles", "Roles with their attributes and memberships.", SQL, True),
        ("grant_privileges", "Grant privileges on a table or schema to a role.",
         {**SQL, "role": ("string", "Role to grant to."), "privileges": ("array", "SELECT, INSERT, UPDATE..."),
          "object": ("string", "Table or schema name.")}, False),
        ("table_size", "Total, table and index size of a table, human readable.",
         {**SQL, "table": ("string", "Table name.")}, True),
        ("locks", "Locks currently held or awaited, with the blocking and blocked queries.", SQL, True),
        ("export_csv", "Run a query and write its rows to a CSV file on the server.",
         {**SQL, "sql": ("string", "The SELECT statement."), "path": ("string", "Output file path."),
          "header": ("boolean", "Write a header row.")}, False),
        ("migration_status", "Applied and pending migrations of the project's migration tool.",
         {**SQL, "directory": ("string", "Migrations directory.")}, True),
    ],
}


def tools(kind: str) -> list[Tool]:
    out = []
    for name, description, params, read_only in SERVERS[kind]:
        properties: dict[str, Any] = {}
        for key, (kind_, text) in params.items():
            prop: dict[str, Any] = {"type": kind_, "description": text}
            if kind_ == "array":
                prop["items"] = {"type": "string"}
            properties[key] = prop
        required = [k for k in params if k in ("owner", "repo", "path", "sql", "table", "q", "source",
                                                "destination", "paths", "issue_number", "pull_number")]
        schema = {"type": "object", "properties": properties, "required": required}
        out.append(Tool(name=name, description=description, input_schema=schema,
                        annotations=ToolAnnotations(read_only_hint=read_only)))
    return out


async def main(kind: str) -> None:
    listed = tools(kind)

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: Any) -> CallToolResult:
        text = json.dumps({"tool": params.name, "arguments": params.arguments, "ok": True})
        return CallToolResult(content=[TextContent(type="text", text=text)])

    server: Server[Any] = Server(f"bench-{kind}", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
