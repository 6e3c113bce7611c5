package console

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/qafleet/fleetd/clip"
	"github.com/qafleet/fleetd/fleet"
)

func (c *Console) setDial(_ context.Context, _ *http.Request, p params, who caller) (string, any, error) {
	word := strings.TrimSpace(p.get("rung"))
	if word == "" {
		word = strings.TrimSpace(p.get("dial"))
	}
	to, err := fleet.ParseDial(word)
	if err != nil {
		return "", nil, fmt.Errorf("%w: dial %q: want observe, exercise or propose", ErrBadRequest, clip.Text(word, 40))
	}
	reason := strings.TrimSpace(p.get("reason"))
	if reason == "" {
		return "", nil, fmt.Errorf("%w: a reason is required to move the dial (it goes to the audit log)", ErrBadRequest)
	}
	from, err := c.cfg.Control.SetDial(to, reason, who.user)
	if err != nil {
		return "", nil, err
	}
	msg := fmt.Sprintf("dial %s -> %s", from, to)
	c.hub.Publish(Event{Kind: KindControl, Text: msg + " (" + who.user + ": " + clip.Text(reason, 200) + ")"})
	return msg, map[string]any{"ok": true, "message": msg, "from": from.String(), "to": to.String()}, nil
}

func (c *Console) pause(_ context.Context, _ *http.Request, p params, who caller) (string, any, error) {
	reason := strings.TrimSpace(p.get("reason"))
	if err := c.cfg.Control.Pause(reason, who.user); err != nil {
		return "", nil, err
	}
	c.hub.Publish(Event{Kind: KindControl, Text: "paused (" + who.user + ")"})
	return "paused: no run starts; running runs stop at their next tool call", nil, nil
}

func (c *Console) resume(_ context.Context, _ *http.Request, p params, who caller) (string, any, error) {
	if err := c.cfg.Control.Resume(strings.TrimSpace(p.get("reason")), who.user); err != nil {
		return "", nil, err
	}
	c.hub.Publish(Event{Kind: KindControl, Text: "resumed (" + who.user + ")"})
	return "resumed", nil, nil
}

func (c *Console) runNow(ctx context.Context, r *http.Request, _ params, who caller) (string, any, error) {
	if c.cfg.Controls == nil {
		return "", nil, fmt.Errorf("%w: this server has no runner", ErrUnavailable)
	}
	name := r.PathValue("name")
	ahead, err := c.cfg.Controls.RunNow(ctx, name, who.user)
	if err != nil {
		return "", nil, err
	}
	return runNowMessage(name, ahead), nil, nil
}

// runNowMessage says that name started and, when it took a slot other
// specialists' starts were waiting for, that it went ahead of them: an
// operator's run now does not queue, and the operator sees whom it passed.
func runNowMessage(name string, ahead []string) string {
	if len(ahead) == 0 {
		return name + " started"
	}
	return fmt.Sprintf("%s started ahead of %s, waiting for a slot (a run now does not queue; they take the next free slots)", name, strings.Join(ahead, ", "))
}

func (c *Console) triageNow(ctx context.Context, _ *http.Request, _ params, who caller) (string, any, error) {
	if c.cfg.Controls == nil {
		return "", nil, fmt.Errorf("%w: this server has no runner", ErrUnavailable)
	}
	if err := c.cfg.Controls.TriageNow(ctx, who.user); err != nil {
		return "", nil, err
	}
	return "triage started", nil, nil
}

// markKinds are the corrections the console offers on a cluster.
var markKinds = []string{"false-positive", "resolved", "duplicate-of", "accepted-risk", "unmerge"}

func (c *Console) mark(ctx context.Context, r *http.Request, p params, who caller) (string, any, error) {
	if c.cfg.Controls == nil {
		return "", nil, fmt.Errorf("%w: this server cannot post corrections", ErrUnavailable)
	}
	req := MarkRequest{
		Ref:    r.PathValue("index"),
		What:   strings.TrimSpace(p.get("what")),
		Reason: strings.TrimSpace(p.get("reason")),
		Until:  strings.TrimSpace(p.get("until")),
	}
	switch req.What {
	case "false-positive", "resolved", "unmerge":
	case "accepted-risk":
		if req.Reason == "" {
			return "", nil, fmt.Errorf("%w: accepted-risk needs a reason", ErrBadRequest)
		}
	case "duplicate-of":
		of := strings.TrimSpace(p.get("of"))
		if of == "" {
			return "", nil, fmt.Errorf("%w: duplicate-of needs of=J, the entry it duplicates", ErrBadRequest)
		}
		req.What += "=" + of
	default:
		return "", nil, fmt.Errorf("%w: mark %q: want one of %s", ErrBadRequest, clip.Text(req.What, 40), strings.Join(markKinds, ", "))
	}
	if req.Until != "" && req.What != "accepted-risk" {
		return "", nil, fmt.Errorf("%w: until is only for accepted-risk", ErrBadRequest)
	}
	res, err := c.cfg.Controls.Mark(ctx, req, who.user)
	if err != nil {
		return "", nil, err
	}
	what := req.What
	if req.Until != "" {
		what += " until " + clip.Text(req.Until, 40)
	}
	ref := "entry " + req.Ref
	if req.What == "unmerge" && len(req.Ref) == 16 {
		ref = "cluster " + req.Ref
	}
	msg := fmt.Sprintf("%s marked %s: correction posted as entry %d (tx %s); triage applies it at its next pass", ref, what, res.Index, res.Tx)
	if res.Queued {
		msg = fmt.Sprintf("%s marked %s: the chain cannot be reached, so the correction is queued in the outbox and posted when it is back", ref, what)
	}
	c.hub.Publish(Event{Kind: KindControl, Text: msg})
	return msg, map[string]any{"ok": true, "message": msg, "correction": res}, nil
}

// login checks the token and starts a browser session.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Token == "" {
		c.renderLogin(w, r, http.StatusServiceUnavailable, "controls are disabled: the daemon has no HTTP token")
		return
	}
	if why := crossSite(r); why != "" {
		c.renderLogin(w, r, http.StatusForbidden, why)
		return
	}
	p, err := readParams(r)
	if err != nil {
		c.renderLogin(w, r, statusOf(err), err.Error())
		return
	}
	ip := remoteIP(r)
	if ok, wait := c.guesses.allow(ip); !ok {
		w.Header().Set("Retry-After", fmt.Sprint(int(wait.Round(time.Second).Seconds())))
		c.renderLogin(w, r, http.StatusTooManyRequests, fmt.Sprintf("too many wrong tokens from %s: try again in %s", ip, wait.Round(time.Second)))
		return
	}
	if !tokenEqual(strings.TrimSpace(p.get("token")), c.cfg.Token) {
		c.guesses.failed(ip)
		c.log.Warn("console login refused: wrong token", "remote", ip)
		c.renderLogin(w, r, http.StatusUnauthorized, "wrong token: `fleetd http-token` prints the right one")
		return
	}
	name := cleanName(p.get("name"))
	se := c.sessions.create(name)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: se.id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(sessionTTL.Seconds())})
	c.sessions.setFlash(se.id, "logged in as "+name+": controls are enabled")
	http.Redirect(w, r, safeBack(p.get("back")), http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if se := c.sessions.get(r); se != nil {
		p, _ := readParams(r)
		if !tokenEqual(p.get("csrf"), se.csrf) || crossSite(r) != "" {
			c.apiError(w, r, fmt.Errorf("%w: missing or wrong CSRF token", errForbidden))
			return
		}
		c.sessions.remove(se.id)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// cleanName keeps a login name printable, one line and short: it goes to
// the audit log.
func cleanName(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "operator"
	}
	return clip.Text(s, 64)
}
