package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/qafleet/fleetd/chain"
	fleetdaemon "github.com/qafleet/fleetd/daemon"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
	"github.com/spf13/cobra"
)

// findingsCommands read and write the feedback log: `fleetd findings`,
// `findings post` and `findings mark` (cmd_findings.go, post.go, mark.go),
// `fleetd triage` and `fleetd report` (cmd_triage.go, console_report.go),
// and the offline fallback to the stored triage when the node does not
// answer (offline.go). The daemon triages and marks through runTriage,
// triageConfig and markEntry; the demo writes its HTML report through
// writeHTMLReport.
type findingsCommands struct{ *app }

// findingJSON is one log entry as `fleetd findings --json` prints it.
type findingJSON struct {
	Index      uint64        `json:"index"`
	Sender     fleet.Address `json:"sender"`
	Time       time.Time     `json:"time"`
	Trusted    *bool         `json:"trusted,omitempty"`
	FreeForm   bool          `json:"free_form"`
	Source     string        `json:"source,omitempty"`
	Severity   string        `json:"sev"`
	Surface    string        `json:"surface,omitempty"`
	Kind       string        `json:"kind,omitempty"`
	FP         string        `json:"fp,omitempty"`
	Run        string        `json:"run,omitempty"`
	Ref        string        `json:"ref,omitempty"`
	Summary    string        `json:"summary"`
	Repro      string        `json:"repro,omitempty"`
	ParseError string        `json:"parse_error,omitempty"`
	Text       string        `json:"text"`
}

func (a findingsCommands) findingsCmd() *cobra.Command {
	var (
		from   uint64
		asJSON bool
		f      *connFlags
	)
	cmd := &cobra.Command{
		Use:   "findings",
		Short: "List the feedback log's entries with their parsed qa/v1 fields",
		Long: `Reads the whole feedback log (from --from) in pages sized to stay under the
node's eth_call gas cap and prints each entry: index, time, sender, and the
parsed qa/v1 envelope (free-form entries show sev "unknown"). Senders not in
chain.trusted_senders are marked when a trusted set is configured.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			trusted := map[fleet.Address]bool{}
			for _, s := range a.cfg.Chain.TrustedSenders {
				addr, _ := fleet.ParseAddress(s) // validated at load
				trusted[addr] = true
			}
			var tw *tabwriter.Writer
			if !asJSON {
				tw = tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "INDEX\tTIME\tSENDER\tSEV\tSOURCE\tSURFACE\tSUMMARY")
			}
			print := func(page []chain.Entry) error {
				for _, e := range page {
					if e.Index < from {
						continue
					}
					row := findingRow(e, trusted)
					if asJSON {
						if err := a.printJSON(row); err != nil {
							return err
						}
						continue
					}
					writeFindingRow(tw, row)
				}
				return nil
			}
			c := a.resolve(f)
			cl, log, err := a.feedbackLog(ctx, c)
			if errors.Is(err, chain.ErrUnreachable) {
				err = a.fromStore(err, c, print)
			} else if err == nil {
				defer cl.Close()
				_, err = log.Scan(ctx, from, print)
			}
			if tw != nil && err == nil {
				tw.Flush()
			}
			return err
		},
	}
	f = addConnFlags(cmd, "rpc", "chain-id", "feedback-log")
	cmd.Flags().Uint64Var(&from, "from", 0, "first entry index to print")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per entry")
	cmd.AddCommand(a.findingsPostCmd(), a.findingsMarkCmd())
	return cmd
}

func findingRow(e chain.Entry, trusted map[fleet.Address]bool) findingJSON {
	fd, perr := fleet.Parse(e.Text)
	row := findingJSON{
		Index: e.Index, Sender: e.Sender, Time: e.Time, FreeForm: fd.FreeForm,
		Source: fd.Source, Severity: string(fd.Severity), Surface: string(fd.Surface),
		Kind: string(fd.Kind), FP: fd.Fingerprint, Run: fd.Run, Ref: fd.Ref,
		Summary: fd.Summary, Text: e.Text,
	}
	if fd.Repro != nil {
		row.Repro = fd.Repro.Tool + " " + string(fd.Repro.Args)
	}
	if perr != nil {
		row.ParseError = perr.Error()
	}
	if len(trusted) > 0 {
		t := trusted[e.Sender]
		row.Trusted = &t
	}
	return row
}

func writeFindingRow(w io.Writer, r findingJSON) {
	sender := r.Sender.String()
	if r.Trusted != nil && !*r.Trusted {
		sender += " (untrusted)"
	}
	summary := r.Summary
	if i := strings.IndexByte(summary, '\n'); i >= 0 {
		summary = summary[:i] + " …"
	}
	if r.ParseError != "" {
		summary = "[malformed qa/v1: " + r.ParseError + "] " + summary
	}
	fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Index, r.Time.Format(time.RFC3339), sender,
		r.Severity, dash(r.Source), dash(r.Surface), clip(sanitize(summary), 100))
}

// The terminal's text helpers are the daemon's (its narration uses them).
var (
	dash     = fleetdaemon.Dash
	sanitize = fleetdaemon.Sanitize
	clip     = fleetdaemon.Clip
)

func (a findingsCommands) findingsPostCmd() *cobra.Command {
	var (
		text string
		f    *connFlags
	)
	cmd := &cobra.Command{
		Use:   "post --text T --key-file F [--sponsor-key-file S]",
		Short: "Append an operator's free-form or qa/v1 entry to the log",
		Long: `Appends T (or standard input when T is "-") to the feedback log. The key in F
is the poster's identity, recorded as the entry's sender; with a sponsor key
the identity signs (EIP-712) and the sponsor relays and pays, so the identity
needs no funds. Without one, F pays its own gas. A text that starts with qa/v1
must be a well-formed envelope. The entry goes through the outbox: when the
node cannot be reached it is queued (status "queued"; exit 0) and posted, in
order and exactly once, by the next flush.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if text == "-" {
				b, err := io.ReadAll(io.LimitReader(a.stdin, chain.MaxText+1))
				if err != nil {
					return err
				}
				text = strings.TrimSuffix(string(b), "\n")
			}
			if err := chain.CheckText(text); err != nil {
				return fmt.Errorf("findings post: %w", err)
			}
			if _, err := fleet.Parse(text); err != nil {
				if strings.HasPrefix(strings.TrimSpace(text), "qa/v1") {
					return fmt.Errorf("findings post: text starts with qa/v1 but is not a valid envelope: %w", err)
				}
				return fmt.Errorf("findings post: %w", err)
			}
			c := a.resolve(f)
			if c.keyFile == "" {
				return errors.New("findings post: pass --key-file (the poster's identity) or set chain.fleet_key_file")
			}
			identity, err := chain.LoadKey(c.keyFile)
			if err != nil {
				return err
			}
			var sponsor *chain.Key
			if c.sponsorKeyFile != "" {
				if sponsor, err = chain.LoadKey(c.sponsorKeyFile); err != nil {
					return err
				}
			}
			cl, log, err := a.feedbackLog(ctx, c)
			switch {
			case errors.Is(err, chain.ErrUnreachable):
				log = nil // queued: posted when the node answers again
			case err != nil:
				return err
			default:
				defer cl.Close()
			}
			logAddr, _ := fleet.ParseAddress(c.feedbackLog) // feedbackLog parsed it
			p, err := a.recordPoster(identity, sponsor, logAddr, log)
			if err != nil {
				return err
			}
			res, err := p.Post(ctx, poster.Record{Text: text, Source: "findings post", Keying: poster.Once})
			if err != nil {
				return err
			}
			if s := res.Entry; s != nil {
				return a.printJSON(map[string]any{"index": s.Index, "sender": s.Sender, "tx": s.Tx, "block": s.Block, "gas_used": s.GasUsed, "sponsored": sponsor != nil})
			}
			a.noteUnposted("the entry", res.Status, p.OutboxDir())
			return a.printJSON(map[string]any{"status": res.Status, "outbox": p.OutboxDir(), "sender": identity.Address(), "sponsored": sponsor != nil})
		},
	}
	f = addConnFlags(cmd, "rpc", "chain-id", "feedback-log", "key-file", "sponsor-key-file")
	cmd.Flags().StringVar(&text, "text", "", `the entry text, at most 2048 bytes ("-" reads standard input)`)
	cmd.MarkFlagRequired("text")
	return cmd
}
