// Package github is the fix stage's forge on the GitHub REST API, through
// go-github (v62): GitHub, GitHub Enterprise, and other servers speaking
// the API (Gitea, Forgejo). go-github's types stay in this package.
//
// Differences it absorbs (FACTS.md): a duplicate PR is 422 on GitHub and
// 409 on Gitea (both are fixer.ErrExists); Gitea ignores the head filter
// and per_page on PR lists (Find filters and pages itself); labels are
// added by name with {"labels": [...]} after creating missing ones; Gitea
// has no draft flag but "WIP:" title prefixes, while GitHub's drafts are
// native and change state only through GraphQL (markPullRequestReadyForReview,
// convertPullRequestToDraft). Idempotent requests (GET, PATCH, PUT) are
// retried on 5xx and dropped connections; a create that failed that way is
// retried after checking it did not happen.
//
// git fetch and push go to the repository URL with the token in an
// http.extraHeader passed through git's environment, never in a URL or an
// argument. The token is never logged or put in errors.
//
// Like every forge, it has no merge method.
package github

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	gh "github.com/google/go-github/v62/github"
	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fleet"
)

// DefaultBaseURL is GitHub's API.
const DefaultBaseURL = "https://api.github.com/"

// Config configures a Forge.
type Config struct {
	// BaseURL is the REST API root: https://api.github.com/ (default),
	// https://HOST/api/v3/ for GitHub Enterprise, https://HOST/api/v1/ for
	// Gitea.
	BaseURL string
	Owner   string
	Repo    string
	// RepoURL is the git URL fetched from and pushed to (https://HOST/OWNER/REPO.git).
	RepoURL string
	Token   string
	// HTTPClient carries API requests (nil: one with a 60 s timeout).
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Retries of idempotent requests after a 5xx or a dropped connection
	// (default 3; negative: none).
	Retries int
}

// Forge is a repository on a GitHub-API server.
type Forge struct {
	c              *gh.Client
	owner, repo    string
	repoURL, token string
	graphql        string
	log            *slog.Logger
	wip            bool // the server marks drafts by a "WIP:" title (Gitea)
	labelsEnsured  bool
	retries        int
}

var _ fixer.Forge = (*Forge)(nil)

// New checks cfg and returns a Forge. It sends nothing.
func New(cfg Config) (*Forge, error) {
	if cfg.Owner == "" || cfg.Repo == "" {
		return nil, errors.New("github forge: owner and repo are required")
	}
	if cfg.Token == "" {
		return nil, errors.New("github forge: no token")
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	bu, err := url.Parse(base)
	if err != nil || (bu.Scheme != "http" && bu.Scheme != "https") || bu.Host == "" {
		return nil, fmt.Errorf("github forge: base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	ru, err := url.Parse(cfg.RepoURL)
	if cfg.RepoURL == "" || err != nil || ru.User != nil {
		return nil, fmt.Errorf("github forge: repository URL %q: want an http(s) or ssh git URL without credentials", cfg.RepoURL)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	retries := cfg.Retries
	if retries == 0 {
		retries = 3
	}
	hc2 := *hc
	inner := hc2.Transport
	if inner == nil {
		inner = http.DefaultTransport
	}
	hc2.Transport = &retrying{next: inner, retries: max(0, retries)}
	c := gh.NewClient(&hc2).WithAuthToken(cfg.Token)
	c.BaseURL = bu
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	gql := bu.ResolveReference(&url.URL{Path: "/graphql"}).String()
	if strings.HasSuffix(bu.Path, "/api/v3/") {
		gql = bu.ResolveReference(&url.URL{Path: strings.TrimSuffix(bu.Path, "v3/") + "graphql"}).String()
	}
	return &Forge{c: c, owner: cfg.Owner, repo: cfg.Repo, repoURL: cfg.RepoURL, token: cfg.Token, graphql: gql,
		log: log.With("component", "forge"), retries: retries}, nil
}

// gitAuth is the git configuration, as environment, that sends the token.
func (f *Forge) gitAuth() []string {
	if !strings.HasPrefix(f.repoURL, "http://") && !strings.HasPrefix(f.repoURL, "https://") {
		return nil // ssh: the user's keys
	}
	cred := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + f.token))
	return []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=Authorization: Basic " + cred}
}

// scrub removes the token from an error's text, whatever produced it.
func (f *Forge) scrub(err error) error {
	if err == nil || f.token == "" || !strings.Contains(err.Error(), f.token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), f.token, "[token]"))
}

// Fetch fetches branch into gitDir and returns its commit.
func (f *Forge) Fetch(ctx context.Context, gitDir, branch string) (string, error) {
	ref := "refs/fleetd/base/" + branch
	if _, err := fixer.Git(ctx, gitDir, f.gitAuth(), "fetch", "--quiet", "--force", "--no-tags", f.repoURL, "+refs/heads/"+branch+":"+ref); err != nil {
		return "", f.scrub(fmt.Errorf("fetch %s: %w", branch, err))
	}
	return fixer.Git(ctx, gitDir, nil, "rev-parse", ref)
}

// Push force-pushes commit to branch.
func (f *Forge) Push(ctx context.Context, gitDir, commit, branch string) error {
	if _, err := fixer.Git(ctx, gitDir, f.gitAuth(), "push", "--quiet", "--force", f.repoURL, commit+":refs/heads/"+branch); err != nil {
		return f.scrub(fmt.Errorf("push %s: %w", branch, err))
	}
	return nil
}

// Find returns the newest PR whose head is branch, in any state. The head
// filter is sent, but not relied on (Gitea ignores it), nor is per_page.
func (f *Forge) Find(ctx context.Context, branch string) (*fixer.PR, error) {
	opt := &gh.PullRequestListOptions{State: "all", Head: f.owner + ":" + branch, ListOptions: gh.ListOptions{PerPage: 100}}
	var best *gh.PullRequest
	for page := 1; page <= 200; page++ {
		opt.Page = page
		prs, resp, err := f.c.PullRequests.List(ctx, f.owner, f.repo, opt)
		if err != nil {
			return nil, f.apiErr("list PRs", err)
		}
		for _, p := range prs {
			if p.GetHead().GetRef() == branch && (best == nil || p.GetNumber() > best.GetNumber()) {
				best = p
			}
		}
		if len(prs) == 0 || resp.NextPage == 0 {
			break
		}
	}
	if best == nil {
		return nil, nil
	}
	// List entries lack "merged" on GitHub: read the PR itself.
	return f.Get(ctx, best.GetNumber())
}

// Get returns PR number.
func (f *Forge) Get(ctx context.Context, number int) (*fixer.PR, error) {
	p, err := f.get(ctx, number)
	if err != nil {
		return nil, err
	}
	return f.convert(p), nil
}

func (f *Forge) get(ctx context.Context, number int) (*gh.PullRequest, error) {
	p, _, err := f.c.PullRequests.Get(ctx, f.owner, f.repo, number)
	if err != nil {
		return nil, f.apiErr(fmt.Sprintf("get PR %d", number), err)
	}
	return p, nil
}

func (f *Forge) convert(p *gh.PullRequest) *fixer.PR {
	out := &fixer.PR{
		Number: p.GetNumber(), URL: p.GetHTMLURL(), Branch: p.GetHead().GetRef(), Base: p.GetBase().GetRef(),
		Title: p.GetTitle(), MergeCommit: p.GetMergeCommitSHA(),
		CreatedAt: p.GetCreatedAt().Time, UpdatedAt: p.GetUpdatedAt().Time, ClosedAt: p.GetClosedAt().Time,
	}
	for _, l := range p.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	switch {
	case p.GetMerged() || p.MergedAt != nil:
		out.State = fixer.StateMerged
		if p.MergedAt != nil {
			out.ClosedAt = p.GetMergedAt().Time
		}
	case p.GetState() == "closed":
		out.State = fixer.StateClosed
	case p.GetDraft():
		out.State = fixer.StateDraft
	default:
		out.State = fixer.StateOpen
	}
	if out.State != fixer.StateMerged && out.State != fixer.StateClosed {
		out.MergeCommit = "" // GitHub's test-merge commit, not a merge
	}
	return out
}

// wipPrefix marks a draft on servers without native drafts (Gitea).
const wipPrefix = "WIP: "

// Open opens a PR; a PR already open for the head is fixer.ErrExists. A
// create that failed with a 5xx or a dropped connection is retried only
// after Find shows it did not happen.
func (f *Forge) Open(ctx context.Context, req fixer.PRRequest) (*fixer.PR, error) {
	np := &gh.NewPullRequest{Title: gh.String(req.Title), Head: gh.String(req.Branch), Base: gh.String(req.Base), Body: gh.String(req.Body), Draft: gh.Bool(req.Draft)}
	var p *gh.PullRequest
	var err error
	for attempt := 0; ; attempt++ {
		p, _, err = f.c.PullRequests.Create(ctx, f.owner, f.repo, np)
		if err == nil {
			break
		}
		if exists(err) {
			return nil, fmt.Errorf("open PR for %s: %w", req.Branch, fixer.ErrExists)
		}
		if !transient(err) || attempt >= f.retries || ctx.Err() != nil {
			return nil, f.apiErr("open PR for "+req.Branch, err)
		}
		if found, ferr := f.Find(ctx, req.Branch); ferr == nil && found != nil && found.Active() {
			return f.Edit(ctx, found.Number, req) // the failed create went through
		}
		if err := fleet.Sleep(ctx, backoff(attempt)); err != nil {
			return nil, err
		}
	}
	if req.Draft && !p.GetDraft() {
		f.wip = true // the server ignored the draft flag
	}
	return f.finish(ctx, p, req)
}

// Edit sets a PR's title, body, draft state and labels.
func (f *Forge) Edit(ctx context.Context, number int, req fixer.PRRequest) (*fixer.PR, error) {
	cur, err := f.get(ctx, number)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(cur.GetTitle(), wipPrefix) {
		f.wip = true
	}
	p, _, err := f.c.PullRequests.Edit(ctx, f.owner, f.repo, number, &gh.PullRequest{Title: gh.String(f.title(req)), Body: gh.String(req.Body)})
	if err != nil {
		return nil, f.apiErr(fmt.Sprintf("edit PR %d", number), err)
	}
	return f.finish(ctx, p, req)
}

// title is the title to send: WIP-prefixed for a draft on a WIP server.
func (f *Forge) title(req fixer.PRRequest) string {
	if req.Draft && f.wip {
		return wipPrefix + req.Title
	}
	return req.Title
}

// finish brings p's draft state and labels to what req asks and returns
// the PR as it now is.
func (f *Forge) finish(ctx context.Context, p *gh.PullRequest, req fixer.PRRequest) (*fixer.PR, error) {
	n := p.GetNumber()
	if p.GetDraft() != req.Draft {
		if err := f.setDraft(ctx, p, req); err != nil {
			return nil, err
		}
	}
	if err := f.setLabels(ctx, n, req.Labels); err != nil {
		return nil, err
	}
	return f.Get(ctx, n)
}

// setDraft changes the draft state: through GraphQL on GitHub, through
// the title prefix where the server has no GraphQL (Gitea).
func (f *Forge) setDraft(ctx context.Context, p *gh.PullRequest, req fixer.PRRequest) error {
	if !f.wip {
		mutation := "markPullRequestReadyForReview"
		if req.Draft {
			mutation = "convertPullRequestToDraft"
		}
		resp, err := f.graphQL(ctx, fmt.Sprintf(`mutation($id: ID!) { %s(input: {pullRequestId: $id}) { clientMutationId } }`, mutation), p.GetNodeID())
		if err == nil {
			return nil
		}
		var ge *gh.ErrorResponse
		notFound := errors.As(err, &ge) && (ge.Response.StatusCode == http.StatusNotFound || ge.Response.StatusCode == http.StatusMethodNotAllowed)
		// Gitea answers /graphql with a web page (200, text/html), not a
		// 404: this forge learned it was a title-prefix server only when
		// Gitea ignored a draft flag, so one whose PR was opened by
		// another process, or by a create whose answer was lost, failed
		// every change of draft state (issue 25).
		page := resp != nil && resp.Response != nil && resp.StatusCode < 300 && !strings.Contains(resp.Header.Get("Content-Type"), "json")
		if !notFound && !page {
			return f.apiErr("change draft state", err)
		}
		f.wip = true // no GraphQL: a title-prefix server
	}
	_, _, err := f.c.PullRequests.Edit(ctx, f.owner, f.repo, p.GetNumber(), &gh.PullRequest{Title: gh.String(f.title(req))})
	if err != nil {
		return f.apiErr(fmt.Sprintf("edit PR %d title", p.GetNumber()), err)
	}
	return nil
}

// graphQL sends one GraphQL request and returns its answer's response
// (nil when none came) with the error.
func (f *Forge) graphQL(ctx context.Context, query, id string) (*gh.Response, error) {
	r, err := f.c.NewRequest("POST", f.graphql, map[string]any{"query": query, "variables": map[string]any{"id": id}})
	if err != nil {
		return nil, err
	}
	var out struct {
		Errors []struct{ Message string } `json:"errors"`
	}
	resp, err := f.c.Do(ctx, r, &out)
	if err != nil {
		return resp, err
	}
	if len(out.Errors) > 0 {
		return resp, fmt.Errorf("graphql: %s", out.Errors[0].Message)
	}
	return resp, nil
}

// labelColor is the color of labels fleetd creates.
const labelColor = "5319e7"

// setLabels creates missing labels, then replaces the PR's labels with
// names ({"labels": [...]}, the form GitHub and Gitea both read).
func (f *Forge) setLabels(ctx context.Context, number int, names []string) error {
	if len(names) == 0 {
		return nil
	}
	if err := f.ensureLabels(ctx, names); err != nil {
		return err
	}
	r, err := f.c.NewRequest("PUT", fmt.Sprintf("repos/%s/%s/issues/%d/labels", url.PathEscape(f.owner), url.PathEscape(f.repo), number), map[string]any{"labels": names})
	if err != nil {
		return err
	}
	if _, err := f.c.Do(ctx, r, nil); err != nil {
		return f.apiErr(fmt.Sprintf("label PR %d", number), err)
	}
	return nil
}

func (f *Forge) ensureLabels(ctx context.Context, names []string) error {
	have := map[string]bool{}
	opt := &gh.ListOptions{PerPage: 100}
	for page := 1; page <= 50; page++ {
		opt.Page = page
		ls, resp, err := f.c.Issues.ListLabels(ctx, f.owner, f.repo, opt)
		if err != nil {
			return f.apiErr("list labels", err)
		}
		for _, l := range ls {
			have[strings.ToLower(l.GetName())] = true
		}
		if len(ls) == 0 || resp.NextPage == 0 {
			break
		}
	}
	for _, n := range names {
		if have[strings.ToLower(n)] {
			continue
		}
		_, _, err := f.c.Issues.CreateLabel(ctx, f.owner, f.repo, &gh.Label{Name: gh.String(n), Color: gh.String(labelColor), Description: gh.String("opened by fleetd's fix stage")})
		if err != nil && !exists(err) {
			return f.apiErr("create label "+n, err)
		}
	}
	return nil
}

// Comment adds a comment to PR number (not retried: it is not idempotent).
func (f *Forge) Comment(ctx context.Context, number int, body string) error {
	_, _, err := f.c.Issues.CreateComment(ctx, f.owner, f.repo, number, &gh.IssueComment{Body: gh.String(body)})
	if err != nil {
		return f.apiErr(fmt.Sprintf("comment on PR %d", number), err)
	}
	return nil
}

// exists reports the answers to a duplicate: 409 (Gitea) or 422 "already
// exists" (GitHub).
func exists(err error) bool {
	var ge *gh.ErrorResponse
	if !errors.As(err, &ge) || ge.Response == nil {
		return false
	}
	switch ge.Response.StatusCode {
	case http.StatusConflict:
		return true
	case http.StatusUnprocessableEntity:
		if strings.Contains(strings.ToLower(ge.Message), "already exist") {
			return true
		}
		for _, e := range ge.Errors {
			if strings.Contains(strings.ToLower(e.Message), "already exist") || e.Code == "already_exists" {
				return true
			}
		}
	}
	return false
}

// transient reports a 5xx or a connection that failed.
func transient(err error) bool {
	var ge *gh.ErrorResponse
	if errors.As(err, &ge) && ge.Response != nil {
		return ge.Response.StatusCode >= 500
	}
	var rl *gh.RateLimitError
	if errors.As(err, &rl) {
		return false
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// apiErr wraps an API error with op, keeping the status and the server's
// message but never the request's headers.
func (f *Forge) apiErr(op string, err error) error {
	var ge *gh.ErrorResponse
	if errors.As(err, &ge) && ge.Response != nil {
		return f.scrub(fmt.Errorf("%s: %s %d: %s", op, ge.Response.Request.Method, ge.Response.StatusCode, ge.Message))
	}
	return f.scrub(fmt.Errorf("%s: %w", op, err))
}

// backoff is the wait before retry attempt+1 (0.5 s, 1 s, 2 s, ...).
func backoff(attempt int) time.Duration { return time.Duration(500<<attempt) * time.Millisecond }

// retrying retries idempotent requests (GET, HEAD, PUT, PATCH, DELETE) on
// a 5xx answer or a failed connection.
type retrying struct {
	next    http.RoundTripper
	retries int
}

func (t *retrying) RoundTrip(req *http.Request) (*http.Response, error) {
	if !slices.Contains([]string{"GET", "HEAD", "PUT", "PATCH", "DELETE"}, req.Method) {
		return t.next.RoundTrip(req)
	}
	for attempt := 0; ; attempt++ {
		r := req
		if attempt > 0 && req.Body != nil {
			if req.GetBody == nil {
				return nil, errors.New("cannot retry a request whose body cannot be re-read")
			}
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			r = req.Clone(req.Context())
			r.Body = body
		}
		resp, err := t.next.RoundTrip(r)
		if attempt >= t.retries || req.Context().Err() != nil || (err == nil && resp.StatusCode < 500) {
			return resp, err
		}
		if resp != nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
		}
		if err := fleet.Sleep(req.Context(), backoff(attempt)); err != nil {
			return nil, err
		}
	}
}
