// Package schedule reads cron expressions and time zones for schedule
// triggers (robfig/cron's parser: five fields, an optional leading seconds
// field, and descriptors such as @daily) and computes their fire times.
package schedule
