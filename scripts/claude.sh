# shellcheck shell=bash
# ensure_claude installs the real Claude Code CLI (@anthropic-ai/claude-code)
# from npm into a cache dir, once, and prints the path of its `claude`
# executable: ensure_cli claude from scripts/clis.sh, which says where and
# which version (AGENTMSG_CLAUDE_VERSION; default 2.1.332, the newest that
# passes every live case; the recorded screens are from 2.1.197, and
# e2e/claude/NOTES.md says what differs). Source this file and call the
# function, or run it directly:
#
#   source scripts/claude.sh && CLAUDE=$(ensure_claude) || exit 1
#   bash scripts/claude.sh            # prints the path

# shellcheck source=scripts/clis.sh
. "$(dirname "${BASH_SOURCE[0]}")/clis.sh"

ensure_claude() { ensure_cli claude; }

# Run directly: install if needed and print the path.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -euo pipefail
	ensure_claude
fi
