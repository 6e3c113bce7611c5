package gemini

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/qafleet/fleetd/clip"
	"github.com/qafleet/fleetd/fleet"
	"google.golang.org/genai"
)

// malformed is an error wrapping fleet.ErrMalformed that says what was wrong.
func malformed(format string, args ...any) error {
	return fmt.Errorf("gemini reply: %s: %w", fmt.Sprintf(format, args...), fleet.ErrMalformed)
}

// parse turns a response into a Step. The first function call wins; text
// without a call ends the run; anything else is malformed. Usage is set on
// every path.
func parse(resp *genai.GenerateContentResponse) (fleet.Step, error) {
	step := fleet.Step{Usage: usage(resp.UsageMetadata)}
	if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
		return step, malformed("the prompt was blocked (blockReason %s%s)", pf.BlockReason, detail(pf.BlockReasonMessage))
	}
	if len(resp.Candidates) == 0 || resp.Candidates[0] == nil {
		return step, malformed("the response has no candidates")
	}
	c := resp.Candidates[0]
	var call *genai.Part
	var text strings.Builder
	if c.Content != nil {
		for _, p := range c.Content.Parts {
			switch {
			case p == nil:
			case p.FunctionCall != nil:
				if call == nil {
					call = p
				}
			case p.Text != "" && !p.Thought:
				text.WriteString(p.Text)
			}
		}
	}
	if call != nil {
		fc := call.FunctionCall
		if fc.Name == "" {
			return step, malformed("a function call without a name (finishReason %s)", reason(c.FinishReason))
		}
		args := fc.Args
		if args == nil {
			args = map[string]any{}
		}
		raw, err := json.Marshal(args)
		if err != nil {
			return step, malformed("the arguments of the call to %s cannot be encoded: %v", fc.Name, err)
		}
		step.Call = &fleet.Call{Tool: fc.Name, Args: raw, ID: packID(fc.ID, call.ThoughtSignature)}
		return step, nil
	}
	switch c.FinishReason {
	case "", genai.FinishReasonStop, genai.FinishReasonUnspecified:
	case genai.FinishReasonMalformedFunctionCall:
		return step, malformed("the model produced a malformed function call (finishReason %s%s)", c.FinishReason, detail(c.FinishMessage))
	case genai.FinishReasonMaxTokens:
		return step, malformed("the reply hit the output token limit before it finished (finishReason %s%s)", c.FinishReason, detail(c.FinishMessage))
	default:
		return step, malformed("the model stopped without a usable reply (finishReason %s%s)", c.FinishReason, detail(c.FinishMessage))
	}
	summary := strings.TrimSpace(text.String())
	if summary == "" {
		return step, malformed("the reply has neither a function call nor text (finishReason %s)", reason(c.FinishReason))
	}
	step.Done, step.Summary = true, summary
	return step, nil
}

// usage converts token counts: prompt (plus tool-use prompt) tokens in,
// candidate plus thinking tokens out.
func usage(u *genai.GenerateContentResponseUsageMetadata) fleet.Usage {
	if u == nil {
		return fleet.Usage{}
	}
	return fleet.Usage{
		TokensIn:  int64(u.PromptTokenCount) + int64(u.ToolUsePromptTokenCount),
		TokensOut: int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount),
	}
}

func detail(msg string) string {
	if msg = strings.TrimSpace(msg); msg == "" {
		return ""
	}
	return ": " + clip.Text(msg, 300)
}

func reason(r genai.FinishReason) string {
	if r == "" {
		return "unset"
	}
	return string(r)
}
