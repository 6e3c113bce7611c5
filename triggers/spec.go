// Package triggers decides when specialists run: cron schedules (robfig/cron
// v3, seconds optional, descriptors like @hourly and @every 30s), fixed
// intervals, continuous runs with exponential backoff, and chain events
// polled by block range.
package triggers

import (
	"fmt"

	"github.com/robfig/cron/v3"
)

// cronParser accepts 5-field specs, 6-field specs with seconds first, and
// descriptors (@hourly, @daily, @every 30s, ...).
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron parses a cron spec, returning an error that quotes it.
func ParseCron(spec string) (cron.Schedule, error) {
	s, err := cronParser.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("cron spec %q: %w", spec, err)
	}
	return s, nil
}
