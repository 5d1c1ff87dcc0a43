package chaos

import (
	"testing"

	"github.com/stitchd/stitchd/store/storetest"
)

// TestMain drops the databases the tests cloned (storetest.Main).
func TestMain(m *testing.M) { storetest.Main(m) }
