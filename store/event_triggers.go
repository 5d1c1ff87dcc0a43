package store

import (
	"context"
	"fmt"
	"time"

	"github.com/stitchd/stitchd/engine"
)

// EventTrigger starts a run of its flow for each event posted with its
// name.
type EventTrigger struct {
	ID        string    `gorm:"primaryKey;type:uuid"`
	FlowID    string    `gorm:"type:uuid"`
	Name      string    ``
	Enabled   bool      ``
	CreatedAt time.Time ``
	UpdatedAt time.Time ``
}

// TableName is the event_triggers table.
func (EventTrigger) TableName() string { return "event_triggers" }

// CreateEventTrigger stores an event trigger.
func (s *Store) CreateEventTrigger(ctx context.Context, t *EventTrigger) error {
	if err := s.db.WithContext(ctx).Create(t).Error; err != nil {
		return fmt.Errorf("error creating event trigger: %w", interpretError(err))
	}
	return nil
}

// GetEventTrigger loads an event trigger (ErrNotFound when there is none).
func (s *Store) GetEventTrigger(ctx context.Context, id string) (*EventTrigger, error) {
	var t EventTrigger
	if err := s.db.WithContext(ctx).First(&t, "id = ?", id).Error; err != nil {
		return nil, fmt.Errorf("error loading event trigger %s: %w", id, interpretError(err))
	}
	return &t, nil
}

// FlowEventTriggers lists a flow's event triggers, oldest first.
func (s *Store) FlowEventTriggers(ctx context.Context, flowID string, w TriggerWindow) ([]EventTrigger, error) {
	out := []EventTrigger{}
	if err := w.apply(s.db.WithContext(ctx).Where("flow_id = ?", flowID)).Order("created_at, id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("error listing the event triggers of flow %s: %w", flowID, interpretError(err))
	}
	return out, nil
}

// EventTriggersFor lists the enabled event triggers of workspace ws's live
// flows for an event name.
func (s *Store) EventTriggersFor(ctx context.Context, ws, name string) ([]EventTrigger, error) {
	out := []EventTrigger{}
	err := s.db.WithContext(ctx).Where("name = ? AND enabled AND flow_id IN (SELECT id FROM flows WHERE deleted_at IS NULL AND workspace = ?)",
		name, workspaceOr(ws)).
		Order("created_at, id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("error finding the event triggers of %s: %w", name, interpretError(err))
	}
	return out, nil
}

// SetEventTriggerEnabled enables or disables an event trigger.
func (s *Store) SetEventTriggerEnabled(ctx context.Context, t *EventTrigger, enabled bool) error {
	res := s.db.WithContext(ctx).Model(t).Updates(map[string]any{"enabled": enabled, "updated_at": time.Now()})
	if res.Error != nil {
		return fmt.Errorf("error saving event trigger %s: %w", t.ID, interpretError(res.Error))
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("event trigger %s: %w", t.ID, engine.ErrNotFound)
	}
	t.Enabled = enabled
	return nil
}

// DeleteEventTrigger deletes an event trigger.
func (s *Store) DeleteEventTrigger(ctx context.Context, id string) error {
	res := s.db.WithContext(ctx).Delete(&EventTrigger{}, "id = ?", id)
	if res.Error != nil {
		return fmt.Errorf("error deleting event trigger %s: %w", id, interpretError(res.Error))
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("event trigger %s: %w", id, engine.ErrNotFound)
	}
	return nil
}
