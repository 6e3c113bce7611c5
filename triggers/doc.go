// Package triggers decides when specialists run: cron schedules (robfig/cron
// v3, seconds optional, descriptors like @hourly and @every 30s), fixed
// intervals, continuous runs with exponential backoff, and chain events
// polled by block range. It only decides when: a [Starter] (the daemon's
// runner) owns the runs, refuses one while the specialist is already running,
// paused, over budget or at the fleet-wide concurrency cap, and the
// [Scheduler] counts every refusal as a skip, except that a start refused
// because the fleet is at its cap waits for a slot, in turn (see Fair
// share), and an event start refused because the specialist runs waits for
// that run to end (see Chain events).
//
// # Schedules
//
// A [Spec] has at most one of Cron, Every and Continuous, plus any chain
// events. Cron and Every entries share one robfig/cron instance run under
// cron.Recover and cron.SkipIfStillRunning; Every ticks on a fixed grid from
// the moment the entry is scheduled (Start, or the Replace that added or
// changed it), so it neither drifts nor bursts after a suspend. A
// tick only asks the Starter to begin a run and returns, so a tick during
// the specialist's own long run is refused by the Starter and counted in
// [Stats].Skipped with its reason. A tick refused at the cap waits (Fair
// share).
//
// # Fair share
//
// When the fleet's cap is smaller than the number of specialists, whether a
// specialist runs must not depend on how its period lines up with the
// others'. So a start the Starter refuses with [ErrAtCap] (a cron or every
// tick, an event start) becomes the specialist's pending start, one per
// specialist, and its later ticks and events join it. The pending starts
// form one queue ordered by when each was first refused: when any run ends
// ([Scheduler.RunEnded]) they are tried oldest first, so a freed slot goes
// to the specialist that has waited longest. While anyone waits for a
// slot, a new tick or event of another specialist queues behind them
// without asking the Starter (unless that specialist's own run is going:
// then a tick is refused as running and events wait for that run's end,
// also without asking, since a run that ended a moment ago and whose end
// is not reported yet has freed a slot the Starter would give them ahead
// of the others), and a continuous specialist
// yields: a Starter that is a [Yielder] is asked to have one running
// continuous specialist's run end at its next session boundary (once per
// run), and after a run ends the continuous specialist starts again only
// when no other specialist waits ([Stats].Yielded counts both). A
// held tick that a retry finds the specialist running is dropped as a
// skip. Held starts are dropped when the fleet is paused or over its
// budget at their retry.
//
// [Stats] shows the wait: PendingReason and PendingSince for the start
// waiting now, LongestWait for the longest a held start waited before it
// ran. A specialist with a period (every, or cron) that is not running and
// has not started a run within [StarvedPeriods] periods since it was
// scheduled or last ran is Starved, and StarvedReason says for how long
// and why (its start waits for a slot, or the Starter's last refusal).
// With cap 1 and five specialists a tick waits at most its period plus the
// longest run when the runs fit (TestFairShareCapOfOne).
//
// # Continuous
//
// A continuous specialist runs again as soon as its last run ended and the
// backoff delay passed. The delay after a run that found nothing new (no new
// findings, no error) is [Backoff].Min: the backoff resets. After a run that
// found something new or failed, the delay is twice the previous delay (Min
// the first time), capped at Max, so a probe that keeps producing findings
// cannot flood the log and one that keeps failing cannot hammer a broken
// platform. With the defaults (1s..10m) productive runs wait 1s, 2s, 4s, ...
// 10m, 10m; one quiet run brings the wait back to 1s. A refused start is
// retried after Min without touching the delay.
//
// # Chain events
//
// One poller goroutine reads the head every PollInterval and processes, per
// event kind, the blocks up to head-Confirmations that it has not processed,
// in chunks of at most 2,000 blocks (16 chunks per poll):
//
//   - code_changed: the keccak256 of the code at Config.Registry (the
//     target's registry, the contract the fleet probes; fleetd's own
//     FeedbackLog is not watched for code) at the newest block. The first
//     observation only records the hash; every later difference fires once.
//   - name_registered: Registered logs of Config.Registry.
//   - feedback: FeedbackSubmitted logs of Config.FeedbackLog.
//
// Events found in one poll are coalesced: each subscribed specialist gets one
// start attempt, with a reason such as "event:name_registered x 3" or
// "event:name_registered x 2, feedback x 1", since its runs never overlap
// anyway.
//
// A run in progress does not absorb new events: it read the chain before
// they landed (a triage pass that read the log before the new feedback).
// So an event attempt the Starter refuses with an error wrapping
// [ErrRunning] (the specialist is running) or [ErrAtCap] (the fleet is at
// its concurrency cap) becomes the specialist's pending start, at most one
// per specialist: the events of later polls join it without asking the
// Starter, and its reason keeps counting them ("event:feedback x 7"). It is
// tried again when a run ends, as the Starter's owner reports through
// [Scheduler.RunEnded]: for ErrRunning when one of the specialist's own runs
// ends, for ErrAtCap when any run does, oldest pending first. Refused again
// as busy, it stays pending; refused for any other reason (paused, budget
// spent, node down) it is dropped and counted as a skip. Any run of the
// specialist that starts after the pending start last changed (a tick, a
// manual fire) reads everything it stands for, so it is dropped then too,
// and a reload that unsubscribes the specialist from every event drops it.
// The Starter never runs a specialist twice at once, so neither does a
// retry.
//
// Other refusals of an event attempt stay plain skips: while the fleet is
// paused or over its budget nothing is held, and resuming starts no run
// until the next event (or tick). The Starter is asked to mark a running or
// cap refusal busy only when it is not also paused or over budget
// (fleet.Runner checks pause and budget first). Ticks are held only at the
// cap (Fair share); continuous iterations (which retry on their own) and
// manual fires are never held. [Stats] counts held attempts in Pending,
// pending starts that a retry started in Retried, and shows the start
// pending now in PendingReason.
//
// # Run now
//
// A manual start ([Scheduler.Fire], the console's "run now") is an
// operator's explicit request, so it does not queue: when a slot is free it
// starts at once, even while other specialists' ticks or events wait for a
// slot (the slot a run's end freed before the oldest waiting start took it),
// and [Scheduler.FireAhead] names the starts it went ahead of, which the
// console shows with the start. It never passes the cap: at the cap it is
// refused like any start and is not held, so the button says at once that
// nothing started and why. The starts it went ahead of keep their place and
// take the next slot that frees. A queued manual start would instead leave
// the operator with a button that seemed to do nothing for an unknown time.
//
// A kind no specialist subscribes to is not polled; when a Replace subscribes
// to it again, it resumes from where it stopped.
//
// An event fires at most once. A log is identified by sha256 of its
// transaction hash, topics and data, not by its block or position, so a
// transaction that a reorg moves to another block is recognised; two
// byte-identical logs of one transaction count once. Identities of logs in
// recently processed blocks are kept (bounded) in the persisted state.
//
// RPC failures leave the cursor where it was: nothing is skipped, the range
// is read again at the next poll, and polls back off exponentially from
// PollInterval up to a minute while the node fails.
//
// Reorgs: for each processed range the hash of its last block is kept (the
// last 64 such checkpoints). Before processing, the poller checks that the
// newest checkpoint is still canonical; if not it walks back to the newest
// checkpoint that is, and processes again from there, firing only logs it
// has not seen. If no remembered checkpoint is canonical (a reorg deeper
// than the memory, or a chain reset), it rescans from 64 blocks below the
// cursor (or below head-Confirmations, when that is lower). Each range is read between two reads of its last block's hash,
// so a reorg during the read is noticed and the range is read again.
//
// Confirmations trades latency for stability: with 0 (right for dev chains,
// which do not reorg) an event fires as soon as it is in a block, and an
// event that a reorg later removes has still fired once (a probe run too
// many, harmless). With N, events fire N blocks late and reorgs shallower
// than N are never seen at all.
//
// The poller state (cursor, checkpoints, seen identities, code hash, per
// watched address) is written to StateDir/events.json with a temp file and a
// rename after every poll that changed it, after firing: a crash between the
// two can repeat the attempts of that one poll, never lose them. A restart
// with the same StateDir resumes from the cursor; the first start (or a new
// watched address) begins at the current head and fires nothing from
// history.
package triggers
