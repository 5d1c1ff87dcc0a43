package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/stitchd/stitchd/engine"
)

// Schedule is a schedule trigger: cron in timezone starts a run of the
// flow with input at each tick.
type Schedule struct {
	ID          string          `gorm:"primaryKey;type:uuid"`
	FlowID      string          `gorm:"type:uuid"`
	Cron        string          ``
	Timezone    string          ``
	Input       json.RawMessage `gorm:"type:jsonb"`
	Overlap     string          ``
	CatchUp     string          ``
	Enabled     bool            ``
	NextFireAt  time.Time       ``
	LastFiredAt *time.Time      ``
	LastRunID   *string         `gorm:"type:uuid"`
	LastError   *string         ``
	CreatedAt   time.Time       ``
	UpdatedAt   time.Time       ``
}

// TableName is the schedules table.
func (Schedule) TableName() string { return "schedules" }

// CreateSchedule stores a schedule.
func (s *Store) CreateSchedule(ctx context.Context, sc *Schedule) error {
	if err := s.db.WithContext(ctx).Create(sc).Error; err != nil {
		return fmt.Errorf("error creating schedule: %w", interpretError(err))
	}
	return nil
}

// GetSchedule loads a schedule (ErrNotFound when there is none).
func (s *Store) GetSchedule(ctx context.Context, id string) (*Schedule, error) {
	var sc Schedule
	if err := s.db.WithContext(ctx).First(&sc, "id = ?", id).Error; err != nil {
		return nil, fmt.Errorf("error loading schedule %s: %w", id, interpretError(err))
	}
	return &sc, nil
}

// FlowSchedules lists a flow's schedules, oldest first.
func (s *Store) FlowSchedules(ctx context.Context, flowID string, w TriggerWindow) ([]Schedule, error) {
	out := []Schedule{}
	if err := w.apply(s.db.WithContext(ctx).Where("flow_id = ?", flowID)).Order("created_at, id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("error listing the schedules of flow %s: %w", flowID, interpretError(err))
	}
	return out, nil
}

// SaveSchedule writes a schedule's settings back.
func (s *Store) SaveSchedule(ctx context.Context, sc *Schedule) error {
	res := s.db.WithContext(ctx).Model(sc).Select("cron", "timezone", "input", "overlap", "catch_up", "enabled",
		"next_fire_at", "updated_at").Updates(sc)
	if res.Error != nil {
		return fmt.Errorf("error saving schedule %s: %w", sc.ID, interpretError(res.Error))
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("schedule %s: %w", sc.ID, engine.ErrNotFound)
	}
	return nil
}

// DeleteSchedule deletes a schedule.
func (s *Store) DeleteSchedule(ctx context.Context, id string) error {
	res := s.db.WithContext(ctx).Delete(&Schedule{}, "id = ?", id)
	if res.Error != nil {
		return fmt.Errorf("error deleting schedule %s: %w", id, interpretError(res.Error))
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("schedule %s: %w", id, engine.ErrNotFound)
	}
	return nil
}

// DueSchedule is a claimed due schedule and the database's now.
type DueSchedule struct {
	Schedule
	Now time.Time
	// LastRunStatus is the status of the schedule's last run ("" if none).
	LastRunStatus string
}

// FireSchedules claims up to limit enabled schedules whose next_fire_at
// passed (database time), each in its own transaction holding its row
// (FOR UPDATE SKIP LOCKED: another process skips it), and calls fire,
// which sets what to write back (NextFireAt, LastFiredAt, LastRunID,
// LastError). It returns how many it handled.
func (s *Store) FireSchedules(ctx context.Context, limit int, fire func(ctx context.Context, d *DueSchedule) error) (int, error) {
	n := 0
	for n < limit {
		done, err := s.fireOne(ctx, fire)
		if err != nil || !done {
			return n, err
		}
		n++
	}
	return n, nil
}

var errNoDueSchedule = errors.New("no due schedule")

func (s *Store) fireOne(ctx context.Context, fire func(ctx context.Context, d *DueSchedule) error) (bool, error) {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var d DueSchedule
		res := tx.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"}).
			Where("enabled AND next_fire_at <= now() AND flow_id IN (SELECT id FROM flows WHERE deleted_at IS NULL)").
			Order("next_fire_at").Limit(1).Find(&d.Schedule)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return errNoDueSchedule
		}
		// The flow's row, shared until the tick's run has begun: a delete
		// (which locks it for update) waits for that run and counts it
		// among the flow's runs still going; a flow deleted since the
		// claim's snapshot starts nothing.
		var alive []int
		if err := tx.Raw(`SELECT 1 FROM flows WHERE id = ? AND deleted_at IS NULL FOR SHARE`, d.FlowID).Scan(&alive).Error; err != nil {
			return err
		}
		if len(alive) == 0 {
			return errNoDueSchedule
		}
		if err := tx.Raw(`SELECT now(), coalesce((SELECT status FROM runs WHERE id = ?), '')`, d.LastRunID).
			Row().Scan(&d.Now, &d.LastRunStatus); err != nil {
			return err
		}
		if err := fire(ctx, &d); err != nil {
			return err
		}
		return tx.Model(&d.Schedule).Select("next_fire_at", "last_fired_at", "last_run_id", "last_error", "updated_at").
			Updates(map[string]any{"next_fire_at": d.NextFireAt, "last_fired_at": d.LastFiredAt, "last_run_id": d.LastRunID,
				"last_error": d.LastError, "updated_at": gorm.Expr("now()")}).Error
	})
	if errors.Is(err, errNoDueSchedule) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("error firing a schedule: %w", interpretError(err))
	}
	return true, nil
}

// FlowTriggers lists a flow's webhook triggers, oldest first.
func (s *Store) FlowTriggers(ctx context.Context, flowID string, w TriggerWindow) ([]Trigger, error) {
	q, args := `SELECT `+triggerCols+` FROM triggers t WHERE t.flow_id = ?`, []any{flowID}
	if w.AfterID != "" {
		q, args = q+` AND (t.created_at, t.id) > (?, ?::uuid)`, append(args, w.AfterAt, w.AfterID)
	}
	q += ` ORDER BY t.created_at, t.id`
	if w.Limit > 0 {
		q, args = q+` LIMIT ?`, append(args, w.Limit)
	}
	rows, err := s.db.WithContext(ctx).Raw(q, args...).Rows()
	if err != nil {
		return nil, fmt.Errorf("error listing the triggers of flow %s: %w", flowID, interpretError(err))
	}
	defer rows.Close()
	out := []Trigger{}
	for rows.Next() {
		t, err := scanTrigger(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, interpretError(rows.Err())
}

// TriggerByID loads a webhook trigger.
func (s *Store) TriggerByID(ctx context.Context, id string) (*Trigger, error) {
	t, err := scanTrigger(s.db.WithContext(ctx).Raw(`SELECT `+triggerCols+` FROM triggers t WHERE t.id = ?`, id).Row())
	if err != nil {
		return nil, fmt.Errorf("error loading trigger %s: %w", id, err)
	}
	return t, nil
}

// DeleteTrigger deletes a webhook trigger: its slug answers 404 from then.
func (s *Store) DeleteTrigger(ctx context.Context, id string) error {
	res := s.db.WithContext(ctx).Delete(&triggerRow{}, "id = ?", id)
	if res.Error != nil {
		return fmt.Errorf("error deleting trigger %s: %w", id, interpretError(res.Error))
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("trigger %s: %w", id, engine.ErrNotFound)
	}
	return nil
}
