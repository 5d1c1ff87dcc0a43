package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
)

// profiler saves stitchd's pprof profiles while a scenario runs: CPU
// profiles in 5-second pieces (merge them: go tool pprof bin/stitchd
// dir/chains-cpu-*.pb.gz) and the allocation profile before and after
// (compare with -diff_base).
type profiler struct {
	base, dir, scenario string
	stop                context.CancelFunc
	wg                  sync.WaitGroup
	err                 error
}

func startProfiler(ctx context.Context, base, dir, scenario string) (*profiler, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // G301: profiles the user asked for, for them to read
		return nil, fmt.Errorf("error creating %s: %w", dir, err)
	}
	p := &profiler{base: base, dir: dir, scenario: scenario}
	if err := p.save(ctx, "allocs", scenario+"-allocs-before.pb.gz"); err != nil {
		return nil, err
	}
	ctx, p.stop = context.WithCancel(ctx)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for i := 1; ctx.Err() == nil; i++ {
			// A piece in progress when the scenario ends is completed.
			err := p.save(context.WithoutCancel(ctx), "profile?seconds=5", fmt.Sprintf("%s-cpu-%03d.pb.gz", scenario, i))
			if err != nil {
				p.err = err
				return
			}
		}
	}()
	return p, nil
}

// finish waits for the last CPU piece and saves the allocation profile.
func (p *profiler) finish(ctx context.Context) error {
	p.stop()
	p.wg.Wait()
	if p.err != nil {
		return p.err
	}
	return p.save(ctx, "allocs", p.scenario+"-allocs-after.pb.gz")
}

func (p *profiler) save(ctx context.Context, path, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/"+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("error fetching profile %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("error fetching profile %s: %s", path, resp.Status)
	}
	f, err := os.Create(filepath.Join(p.dir, file)) //nolint:gosec // G304: the profile directory the user named
	if err != nil {
		return fmt.Errorf("error creating profile file: %w", err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return fmt.Errorf("error saving profile %s: %w", file, err)
	}
	return f.Close()
}
