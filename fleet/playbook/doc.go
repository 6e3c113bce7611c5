// Package playbook holds the deterministic planners, one per specialist
// (smoke, security, fuzz, ux, perf): the offline default fleet.Model.
package playbook
