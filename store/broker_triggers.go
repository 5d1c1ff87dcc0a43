package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/stitchd/stitchd/engine"
)

// BrokerTrigger consumes a message broker (kind nats or amqp) for its
// flow: each message starts a run or is posted as an event. Config is the
// kind's settings, as validated by the API (internal/broker.Config).
type BrokerTrigger struct {
	ID        string          `gorm:"primaryKey;type:uuid"`
	FlowID    string          `gorm:"type:uuid"`
	Kind      string          ``
	Config    json.RawMessage `gorm:"type:jsonb"`
	Enabled   bool            ``
	CreatedAt time.Time       ``
	UpdatedAt time.Time       ``
}

// TableName is the broker_triggers table.
func (BrokerTrigger) TableName() string { return "broker_triggers" }

// BrokerConsumer is one stitchd process's connection state for a broker
// trigger.
type BrokerConsumer struct {
	TriggerID   string     `gorm:"primaryKey;type:uuid"`
	InstanceID  string     `gorm:"primaryKey;type:uuid"`
	Connected   bool       ``
	ConnectedAt *time.Time ``
	LastError   *string    ``
	LastErrorAt *time.Time ``
	SeenAt      time.Time  ``
}

// TableName is the broker_consumers table.
func (BrokerConsumer) TableName() string { return "broker_consumers" }

// CreateBrokerTrigger stores a broker trigger.
func (s *Store) CreateBrokerTrigger(ctx context.Context, t *BrokerTrigger) error {
	if err := s.db.WithContext(ctx).Create(t).Error; err != nil {
		return fmt.Errorf("error creating broker trigger: %w", interpretError(err))
	}
	return nil
}

// GetBrokerTrigger loads a broker trigger (ErrNotFound when there is none).
func (s *Store) GetBrokerTrigger(ctx context.Context, id string) (*BrokerTrigger, error) {
	var t BrokerTrigger
	if err := s.db.WithContext(ctx).First(&t, "id = ?", id).Error; err != nil {
		return nil, fmt.Errorf("error loading broker trigger %s: %w", id, interpretError(err))
	}
	return &t, nil
}

// FlowBrokerTriggers lists a flow's broker triggers, oldest first.
func (s *Store) FlowBrokerTriggers(ctx context.Context, flowID string, w TriggerWindow) ([]BrokerTrigger, error) {
	out := []BrokerTrigger{}
	if err := w.apply(s.db.WithContext(ctx).Where("flow_id = ?", flowID)).Order("created_at, id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("error listing the broker triggers of flow %s: %w", flowID, interpretError(err))
	}
	return out, nil
}

// ActiveBrokerTriggers lists the enabled broker triggers of live flows:
// the ones stitchd consumes.
func (s *Store) ActiveBrokerTriggers(ctx context.Context) ([]BrokerTrigger, error) {
	out := []BrokerTrigger{}
	err := s.db.WithContext(ctx).Where("enabled AND flow_id IN (SELECT id FROM flows WHERE deleted_at IS NULL)").
		Order("created_at, id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("error listing the active broker triggers: %w", interpretError(err))
	}
	return out, nil
}

// SaveBrokerTrigger writes a broker trigger's config and enabled back.
func (s *Store) SaveBrokerTrigger(ctx context.Context, t *BrokerTrigger) error {
	t.UpdatedAt = time.Now()
	res := s.db.WithContext(ctx).Model(t).Select("config", "enabled", "updated_at").Updates(t)
	if res.Error != nil {
		return fmt.Errorf("error saving broker trigger %s: %w", t.ID, interpretError(res.Error))
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("broker trigger %s: %w", t.ID, engine.ErrNotFound)
	}
	return nil
}

// DeleteBrokerTrigger deletes a broker trigger (and its consumers' rows):
// every process stops consuming it at its next look.
func (s *Store) DeleteBrokerTrigger(ctx context.Context, id string) error {
	res := s.db.WithContext(ctx).Delete(&BrokerTrigger{}, "id = ?", id)
	if res.Error != nil {
		return fmt.Errorf("error deleting broker trigger %s: %w", id, interpretError(res.Error))
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("broker trigger %s: %w", id, engine.ErrNotFound)
	}
	return nil
}

// SetBrokerConsumer writes a process's connection state for a trigger
// (seen now, database time). A trigger deleted meanwhile writes nothing.
func (s *Store) SetBrokerConsumer(ctx context.Context, c BrokerConsumer) error {
	err := s.db.WithContext(ctx).Exec(`INSERT INTO broker_consumers
		(trigger_id, instance_id, connected, connected_at, last_error, last_error_at, seen_at)
		SELECT ?, ?, ?, ?, ?, ?, now() WHERE EXISTS (SELECT 1 FROM broker_triggers WHERE id = ?)
		ON CONFLICT (trigger_id, instance_id) DO UPDATE SET connected = excluded.connected,
		connected_at = excluded.connected_at, last_error = excluded.last_error,
		last_error_at = excluded.last_error_at, seen_at = now()`,
		c.TriggerID, c.InstanceID, c.Connected, c.ConnectedAt, c.LastError, c.LastErrorAt, c.TriggerID).Error
	if err != nil {
		return fmt.Errorf("error saving the consumer state of broker trigger %s: %w", c.TriggerID, interpretError(err))
	}
	return nil
}

// TouchBrokerConsumers marks a process's consumers of triggerIDs as seen
// now: the process lives.
func (s *Store) TouchBrokerConsumers(ctx context.Context, instanceID string, triggerIDs []string) error {
	if len(triggerIDs) == 0 {
		return nil
	}
	err := s.db.WithContext(ctx).Model(&BrokerConsumer{}).
		Where("instance_id = ? AND trigger_id IN ?", instanceID, triggerIDs).
		Update("seen_at", gorm.Expr("now()")).Error
	if err != nil {
		return fmt.Errorf("error refreshing the broker consumers of %s: %w", instanceID, interpretError(err))
	}
	return nil
}

// BrokerConsumers lists the consumers of triggerIDs seen within maxAge
// (database time), most recently connected or failing first, and deletes
// older ones (of processes gone).
func (s *Store) BrokerConsumers(ctx context.Context, triggerIDs []string, maxAge time.Duration) ([]BrokerConsumer, error) {
	out := []BrokerConsumer{}
	if len(triggerIDs) == 0 {
		return out, nil
	}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		stale := gorm.Expr("now() - make_interval(secs => ?)", maxAge.Seconds())
		if err := tx.Where("trigger_id IN ? AND seen_at < ?", triggerIDs, stale).Delete(&BrokerConsumer{}).Error; err != nil {
			return err
		}
		return tx.Where("trigger_id IN ?", triggerIDs).
			Order(clause.OrderBy{Expression: gorm.Expr("trigger_id, greatest(connected_at, last_error_at) DESC NULLS LAST, instance_id")}).
			Find(&out).Error
	})
	if err != nil {
		return nil, fmt.Errorf("error listing broker consumers: %w", interpretError(err))
	}
	return out, nil
}

// DeleteBrokerConsumers deletes a process's consumer rows (it stops).
func (s *Store) DeleteBrokerConsumers(ctx context.Context, instanceID string) error {
	if err := s.db.WithContext(ctx).Delete(&BrokerConsumer{}, "instance_id = ?", instanceID).Error; err != nil {
		return fmt.Errorf("error deleting the broker consumers of %s: %w", instanceID, interpretError(err))
	}
	return nil
}
