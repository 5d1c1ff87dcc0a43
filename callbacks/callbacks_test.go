package callbacks

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/jsonlimit"
)

func ring(t testing.TB) *Keyring {
	k, err := NewKeyring(Key{ID: "k2", Secret: []byte("0123456789abcdef0123456789abcdef")},
		Key{ID: "k1", Secret: []byte("fedcba9876543210fedcba9876543210")})
	require.NoError(t, err)
	return k
}

func TestTokenRoundTrip(t *testing.T) {
	t.Parallel()
	k := ring(t)
	now := time.Unix(1_800_000_000, 0)
	c := Claims{RunID: "7d3c0f0e-0000-4000-8000-000000000001", Key: "score_2_1", Attempt: 3, Expiry: now.Add(time.Hour)}
	tok := k.Mint(c)
	require.NotContains(t, tok, "/")
	got, err := k.Verify(tok, now)
	require.NoError(t, err)
	require.Equal(t, c.RunID, got.RunID)
	require.Equal(t, c.Key, got.Key)
	require.Equal(t, 3, got.Attempt)
	require.True(t, got.Expiry.Equal(c.Expiry))
}

func TestTokenRejections(t *testing.T) {
	t.Parallel()
	k := ring(t)
	now := time.Unix(1_800_000_000, 0)
	good := k.Mint(Claims{RunID: "r", Key: "a", Attempt: 1, Expiry: now.Add(time.Minute)})
	parts := strings.Split(good, ".")
	other, err := NewKeyring(Key{ID: "k2", Secret: []byte("another-secret-of-32-bytes-long!")})
	require.NoError(t, err)
	forged := other.Mint(Claims{RunID: "r", Key: "a", Attempt: 1, Expiry: now.Add(time.Minute)})
	swapped := parts[0] + "." + parts[1] + "." + b64.EncodeToString([]byte("r\nb\n1\n"+"1800000060")) + "." + parts[3]
	tests := []struct {
		name, tok string
		want      error
	}{
		{"empty", "", ErrTokenInvalid},
		{"garbage", "abc", ErrTokenInvalid},
		{"wrong version", "v2." + strings.Join(parts[1:], "."), ErrTokenInvalid},
		{"unknown key id", parts[0] + ".k9." + parts[2] + "." + parts[3], ErrTokenInvalid},
		{"forged with another secret", forged, ErrTokenInvalid},
		{"claims swapped (other node)", swapped, ErrTokenInvalid},
		{"signature tampered", good[:len(good)-2] + "AA", ErrTokenInvalid},
		{"extra part", good + ".x", ErrTokenInvalid},
		{"attempt past int4", k.Mint(Claims{RunID: "r", Key: "a", Attempt: 1 << 31, Expiry: now.Add(time.Minute)}), ErrTokenInvalid},
		{"attempt 2^62", k.Mint(Claims{RunID: "r", Key: "a", Attempt: 1 << 62, Expiry: now.Add(time.Minute)}), ErrTokenInvalid},
	}
	for _, tt := range tests {
		_, err := k.Verify(tt.tok, now)
		require.ErrorIs(t, err, tt.want, tt.name)
	}
	_, err = k.Verify(good, now.Add(time.Minute))
	require.ErrorIs(t, err, ErrTokenExpired)
	// Tokens minted with a rotated-out (but not retired) key still verify.
	old, err := NewKeyring(Key{ID: "k1", Secret: []byte("fedcba9876543210fedcba9876543210")})
	require.NoError(t, err)
	_, err = k.Verify(old.Mint(Claims{RunID: "r", Key: "a", Attempt: 1, Expiry: now.Add(time.Minute)}), now)
	require.NoError(t, err)
}

func TestWebhookSignature(t *testing.T) {
	t.Parallel()
	secret := []byte("whsec-test-secret")
	body := []byte(`{"runId":"r"}`)
	now := time.Unix(1_800_000_000, 0)
	sig := SignWebhook(secret, "msg_1", now.Unix(), body)
	require.True(t, strings.HasPrefix(sig, "v1,"))
	require.NoError(t, VerifyWebhook(secret, "msg_1", "1800000000", "v0,xxx "+sig, body, now, 5*time.Minute))
	require.Error(t, VerifyWebhook(secret, "msg_1", "1800000000", sig, []byte(`{"runId":"x"}`), now, 5*time.Minute))
	require.Error(t, VerifyWebhook(secret, "msg_2", "1800000000", sig, body, now, 5*time.Minute))
	require.Error(t, VerifyWebhook(secret, "msg_1", "1800000000", sig, body, now.Add(10*time.Minute), 5*time.Minute), "replayed with an old timestamp")
	require.Error(t, VerifyWebhook(secret, "msg_1", "nope", sig, body, now, 5*time.Minute))
}

func TestParseCallback(t *testing.T) {
	t.Parallel()
	b, err := ParseCallback([]byte(`{"status":"completed","output":{"a":1}}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"a":1}`, string(b.Output))
	b, err = ParseCallback([]byte(`{"status":"completed"}`))
	require.NoError(t, err)
	require.Equal(t, "null", string(b.Output))
	_, err = ParseCallback([]byte(`{"status":"running","progress":{"p":1}}`))
	require.NoError(t, err)
	// Nested duplicates are the output's own business (jsonb keeps the last).
	b, err = ParseCallback([]byte(`{"status":"completed","output":{"a":1,"a":2}}`))
	require.NoError(t, err)
	require.Equal(t, `{"a":1,"a":2}`, string(b.Output))
	for _, bad := range []string{``, `[]`, `"x"`, `{`, `{"status":"ok"}`, `{"status":1}`, `{"status":"failed"} {}`,
		`{"status":"completed","status":"failed"}`, `{"status":"failed","Status":"completed"}`,
		`{"status":"completed","output":1,"OUTPUT":2}`} {
		_, err := ParseCallback([]byte(bad))
		require.Error(t, err, bad)
	}
	// A lone surrogate (an emoji cut in half) is refused with its path, so
	// the callback answers 400 rather than failing in the database.
	for body, path := range map[string]string{
		`{"status":"completed","output":{"name":"caf\ud83d"}}`: "$.output.name",
		`{"status":"failed","error":"\udc00 lost"}`:            "$.error",
		`{"status":"running","progress":["\ud800"]}`:           "$.progress[0]",
	} {
		_, err := ParseCallback([]byte(body))
		var se *jsonlimit.SurrogateError
		require.ErrorAs(t, err, &se, body)
		require.Equal(t, path, se.Path, body)
	}
}

func TestBodyExcerpt(t *testing.T) {
	t.Parallel()
	require.Empty(t, bodyExcerpt(nil))
	require.Empty(t, bodyExcerpt([]byte(" \n\t ")))
	require.Equal(t, `: {"error": "restarting"}`, bodyExcerpt([]byte("{\"error\":\n  \"restarting\"}\n")))
	require.Equal(t, ": bad gateway", bodyExcerpt([]byte("bad\x00\x1b gateway\xff")))
	long := bodyExcerpt([]byte(strings.Repeat("é", 500)))
	require.True(t, strings.HasSuffix(long, "…"))
	require.LessOrEqual(t, len(long), 2+maxExcerpt+len("…"))
	require.True(t, utf8.ValidString(long))
}

func FuzzVerifyToken(f *testing.F) {
	k := ring(f)
	now := time.Unix(1_800_000_000, 0)
	f.Add(k.Mint(Claims{RunID: "r", Key: "a_1", Attempt: 1, Expiry: now.Add(time.Hour)}))
	f.Add("v1.k2.cg.AAAA")
	f.Add("....")
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := k.Verify(tok, now)
		if err == nil {
			// Anything accepted must re-mint to a token that verifies the same.
			again, err := k.Verify(k.Mint(c), now)
			if err != nil || again.RunID != c.RunID || again.Key != c.Key || again.Attempt != c.Attempt {
				t.Fatalf("accepted token %q does not round-trip", tok)
			}
		}
	})
}

func FuzzParseCallback(f *testing.F) {
	f.Add([]byte(`{"status":"completed","output":{"a":1}}`))
	f.Add([]byte(`{"status":"failed","error":"x"}`))
	f.Add([]byte(`{"status":"running"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cb, err := ParseCallback(b)
		if err != nil {
			return
		}
		switch cb.Status {
		case "completed", "failed", "running":
		default:
			t.Fatalf("accepted status %q", cb.Status)
		}
	})
}

func TestAddressGuard(t *testing.T) {
	t.Parallel()
	allow, err := ParseCIDRs("10.1.0.0/16, 127.0.0.1/32")
	require.NoError(t, err)
	g := &AddressGuard{DenyPrivate: true, Allow: allow}
	for addr, ok := range map[string]bool{
		"93.184.216.34:443": true, "[2606:2800:220:1::1]:80": true,
		"127.0.0.1:8080": true, "10.1.2.3:80": true, // allowed ranges
		"127.0.0.2:80": false, "10.2.0.1:80": false, "192.168.1.1:80": false, "172.16.0.1:80": false,
		"169.254.169.254:80": false, "[::1]:80": false, "[fe80::1]:80": false, "0.0.0.0:80": false,
		"100.64.0.1:80": false, "[::ffff:192.168.0.1]:80": false, "[fd00::1]:80": false,
	} {
		err := g.Check(addr)
		if ok {
			require.NoError(t, err, addr)
		} else {
			require.ErrorIs(t, err, ErrAddressRefused, addr)
		}
	}
	require.NoError(t, (&AddressGuard{}).Check("127.0.0.1:1"), "off by default")
	_, err = ParseCIDRs("10.0.0.0/99")
	require.Error(t, err)
}

// TestAddressGuardRanges: link-local and cloud-metadata addresses are
// refused in every mode (even when allowed); deny mode also refuses the
// ranges that reach private addresses by translation and those not for
// hosts.
func TestAddressGuardRanges(t *testing.T) {
	t.Parallel()
	all, err := ParseCIDRs("0.0.0.0/0,::/0")
	require.NoError(t, err)
	everywhere := []*AddressGuard{{}, {DenyPrivate: true}, {DenyPrivate: true, Allow: all}}
	for _, addr := range []string{"169.254.169.254:80", "169.254.0.1:443", "[fd00:ec2::254]:80", "[fe80::1%eth0]:80",
		"[::ffff:169.254.169.254]:80", "[ff02::1]:80"} {
		for _, g := range everywhere {
			require.ErrorIs(t, g.Check(addr), ErrAddressRefused, "%s (deny %v, allow %v)", addr, g.DenyPrivate, g.Allow)
		}
	}
	deny := &AddressGuard{DenyPrivate: true}
	for _, addr := range []string{"[64:ff9b::7f00:1]:80", "[64:ff9b::a00:1]:80", "[2002:7f00:1::1]:80", "[2002:c0a8:101::]:80",
		"[::7f00:1]:80", "[::a00:1]:80", "198.18.0.1:80", "198.19.255.254:80", "240.0.0.1:80", "255.255.255.255:80"} {
		require.ErrorIs(t, deny.Check(addr), ErrAddressRefused, addr)
		require.NoError(t, (&AddressGuard{}).Check(addr), "allow mode: %s", addr)
	}
	for _, addr := range []string{"198.17.255.255:80", "198.20.0.0:80", "[2001:db8::1]:80", "[2606:4700::1111]:443", "1.1.1.1:53"} {
		require.NoError(t, deny.Check(addr), addr)
	}
}

// TestAddressGuardSelf: stitchd's own listen address and base URL are
// refused in every mode, even when allowed.
func TestAddressGuardSelf(t *testing.T) {
	t.Parallel()
	loop, err := ParseCIDRs("127.0.0.0/8")
	require.NoError(t, err)
	for _, base := range []*AddressGuard{nil, {}, {DenyPrivate: true, Allow: loop}} {
		g, err := base.ForServer(ServerAddresses{Listen: netip.MustParseAddrPort("127.0.0.1:8080"),
			BaseURL: "https://Stitchd.Example.com/app"})
		require.NoError(t, err)
		for _, addr := range []string{"127.0.0.1:8080", "0.0.0.0:8080", "[::]:8080", "[::ffff:127.0.0.1]:8080"} {
			require.ErrorIs(t, g.Check(addr), ErrAddressRefused, addr)
		}
		require.NoError(t, g.Check("127.0.0.1:8081"), "another port")
		for raw, refused := range map[string]bool{
			"https://stitchd.example.com/app/hooks/lead":   true,
			"https://STITCHD.example.com.:443/app/hooks/x": true,
			"https://stitchd.example.com/app":              true,
			"https://stitchd.example.com/APP/callbacks/t":  true,
			"https://stitchd.example.com/other/hooks/lead": false, // another service behind the same host
			"https://stitchd.example.com/application":      false,
			"http://stitchd.example.com/app/hooks/lead":    false, // port 80, not 443
			"https://stitchd.example.com:8443/app/hooks/x": false,
			"https://worker.example.com/app/hooks/lead":    false,
		} {
			u, err := url.Parse(raw)
			require.NoError(t, err)
			if refused {
				require.ErrorIs(t, g.CheckURL(u), ErrAddressRefused, raw)
			} else {
				require.NoError(t, g.CheckURL(u), raw)
			}
		}
	}
	// Listening on every address: each local address on the port is self.
	g, err := (&AddressGuard{}).ForServer(ServerAddresses{Listen: netip.MustParseAddrPort("0.0.0.0:9000")})
	require.NoError(t, err)
	require.ErrorIs(t, g.Check("127.0.0.1:9000"), ErrAddressRefused)
	require.ErrorIs(t, g.Check("[::1]:9000"), ErrAddressRefused)
	require.NoError(t, g.Check("93.184.216.34:9000"), "not a local address")
	// A base URL on an IP address: that address and port.
	g, err = (&AddressGuard{}).ForServer(ServerAddresses{BaseURL: "http://10.0.0.5:8080"})
	require.NoError(t, err)
	require.ErrorIs(t, g.Check("10.0.0.5:8080"), ErrAddressRefused)
	require.NoError(t, g.Check("10.0.0.5:8081"))
}
