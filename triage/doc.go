// Package triage reads the feedback log and ranks it.
package triage
