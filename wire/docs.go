package wire

import (
	"fmt"
	"strings"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/mailbox"
)

// The parts of docs/api.md drawn from the code, so that the page cannot
// say other than the code does: the operations, the message state
// machine, the reasons, the event types and the error codes.

// DocSections are the generated sections of docs/api.md by name: each
// stands between <!-- generated: NAME --> and <!-- end: NAME -->.
func DocSections() map[string]string {
	return map[string]string{
		"operations": operationsTable(),
		"states":     statesSection(),
		"reasons":    wordsTable("reason", courier.Reasons),
		"verdicts":   wordsTable("verdict", courier.Verdicts),
		"events":     eventsTable(),
		"codes":      codesTable(),
	}
}

func operationsTable() string {
	var b strings.Builder
	b.WriteString("| operation | id | does | answers |\n|---|---|---|---|\n")
	for _, op := range Operations() {
		takes := ""
		switch {
		case op.Body != nil:
			takes = " (body `" + op.Body.Name() + "`)"
		case op.Query != nil:
			takes = " (query `" + op.Query.Name() + "`)"
		}
		answer := ""
		for _, a := range op.Answers {
			if a.Status/100 != 2 {
				continue
			}
			name := "JSON"
			switch {
			case a.Type != nil:
				name = "`" + a.Type.Name() + "`"
			case len(a.AnyOf) > 0:
				var names []string
				for _, t := range a.AnyOf {
					names = append(names, "`"+t.Name()+"`")
				}
				name = strings.Join(names, " or ")
			case a.Media != "":
				name = a.Media
			}
			if answer != "" {
				answer += "; "
			}
			answer += fmt.Sprintf("%d %s", a.Status, name)
		}
		fmt.Fprintf(&b, "| `%s %s` | %s | %s%s | %s |\n", op.Method, op.Path, op.ID, op.Summary, takes, answer)
	}
	return b.String()
}

func statesSection() string {
	var b strings.Builder
	b.WriteString("```mermaid\n" + mailbox.StateDiagram() + "```\n\n")
	b.WriteString("| state | final | means |\n|---|---|---|\n")
	for _, s := range mailbox.States {
		final := ""
		if s.Final {
			final = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", s.State, final, s.Doc)
	}
	return b.String()
}

func wordsTable(what string, ws []courier.Word) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| %s | means |\n|---|---|\n", what)
	for _, w := range ws {
		fmt.Fprintf(&b, "| `%s` | %s |\n", w.Word, w.Doc)
	}
	return b.String()
}

func eventsTable() string {
	var b strings.Builder
	b.WriteString("| type | means | always carries |\n|---|---|---|\n")
	for _, k := range eventlog.Kinds {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", k.Type, k.Doc, strings.Join(k.Carries, ", "))
	}
	fmt.Fprintf(&b, "| `%s` (SSE event name) | too slow: cut off; reconnect from `resume_from` | resume_from |\n", StreamEventDropped)
	fmt.Fprintf(&b, "| `%s` (SSE event name) | the events after the cursor were rotated away: read the state again | error, resume_from |\n", StreamEventExpired)
	fmt.Fprintf(&b, "| `%s` (SSE event name) | the cursor is past the end of the log (wiped or moved): read the state again | error, last, resume_from |\n", StreamEventReset)
	return b.String()
}

func codesTable() string {
	var b strings.Builder
	b.WriteString("| code | means |\n|---|---|\n")
	for _, c := range Codes {
		fmt.Fprintf(&b, "| `%s` | %s |\n", c.Code, c.Doc)
	}
	return b.String()
}

// FillDoc replaces each generated section of page with what the code says
// now; missing names the sections page lacks.
func FillDoc(page string) (out string, missing []string) {
	out = page
	for name, body := range DocSections() {
		start, end := "<!-- generated: "+name+" -->\n", "<!-- end: "+name+" -->"
		i := strings.Index(out, start)
		j := strings.Index(out, end)
		if i < 0 || j < i {
			missing = append(missing, name)
			continue
		}
		out = out[:i+len(start)] + body + out[j:]
	}
	return out, missing
}
