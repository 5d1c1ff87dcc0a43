package callbacks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
)

// AddressGuard refuses worker addresses (an SSRF guard). It checks the
// address actually dialled, after DNS resolution, so a name that resolves
// to a refused address is refused too.
//
// In every mode it refuses stitchd's own addresses (Self, SelfURL: a flow
// whose worker is stitchd's own hook would start runs in a loop), and
// link-local and cloud-metadata addresses. With DenyPrivate it also
// refuses every address of this machine (ForServer lists them), loopback,
// private, CGNAT, multicast and unspecified addresses,
// the special-purpose ranges that reach them by other routes (NAT64, 6to4,
// IPv4-compatible IPv6) and the benchmarking, reserved and broadcast
// ranges, unless Allow lists them.
type AddressGuard struct {
	// DenyPrivate turns the private-address checks on.
	DenyPrivate bool
	// Allow lists ranges that are allowed even when private (never
	// stitchd's own address, nor a link-local or metadata one).
	Allow []netip.Prefix
	// Self lists the addresses stitchd listens on. An unspecified address
	// (0.0.0.0, ::) stands for every local address on its port.
	Self []netip.AddrPort
	// SelfURL is stitchd's public base URL: a worker URL on its host and
	// port, under its path, is refused before anything is dialled (it may
	// reach stitchd through a proxy whose address the guard cannot know).
	SelfURL *url.URL
	// local lists this machine's interface addresses (ForServer), which
	// a listener on an unspecified address answers on: refused with
	// DenyPrivate unless Allow lists the address exactly.
	local []netip.Addr
}

// ErrAddressRefused wraps a connection the guard refused.
var ErrAddressRefused = errors.New("worker address refused")

// ParseCIDRs parses a comma-separated list of CIDRs ("10.0.0.0/8,127.0.0.1/32").
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("invalid CIDR %q: %w", f, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// ServerAddresses says where a stitchd serves, for ForServer.
type ServerAddresses struct {
	// Listen is the address the HTTP server is bound to.
	Listen netip.AddrPort
	// BaseURL is the public URL workers call back on.
	BaseURL string
}

// ForServer returns a copy of g (nil: a guard with every option off) that
// also refuses the server's own addresses.
func (g *AddressGuard) ForServer(p ServerAddresses) (*AddressGuard, error) {
	out := &AddressGuard{}
	if g != nil {
		out.DenyPrivate, out.Allow = g.DenyPrivate, slices.Clone(g.Allow)
		out.Self, out.SelfURL = slices.Clone(g.Self), g.SelfURL
	}
	if p.Listen.IsValid() {
		out.Self = append(out.Self, netip.AddrPortFrom(p.Listen.Addr().Unmap(), p.Listen.Port()))
	}
	if p.BaseURL != "" {
		u, err := url.Parse(p.BaseURL)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("invalid base URL %q", p.BaseURL)
		}
		out.SelfURL = u
		if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil {
			out.Self = append(out.Self, netip.AddrPortFrom(ip.Unmap(), effectivePort(u)))
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("error listing local addresses: %w", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out.local = append(out.local, ip.Unmap())
			}
		}
	}
	return out, nil
}

// Check reports whether dialling address (ip:port) is allowed.
func (g *AddressGuard) Check(address string) error {
	if g == nil {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		host, _, serr := net.SplitHostPort(address)
		if serr != nil {
			host = address
		}
		ip, perr := netip.ParseAddr(host)
		if perr != nil {
			return fmt.Errorf("%w: %s is not an IP address", ErrAddressRefused, host)
		}
		ap = netip.AddrPortFrom(ip, 0)
	}
	ip := ap.Addr().Unmap().WithZone("")
	if g.isSelf(ip, ap.Port()) {
		return fmt.Errorf("%w: %s is stitchd's own address", ErrAddressRefused, ap)
	}
	if ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip == awsMetadataV6 {
		return fmt.Errorf("%w: %s is a link-local or cloud metadata address", ErrAddressRefused, ip)
	}
	if !g.DenyPrivate {
		return nil
	}
	// The machine's own addresses reach every service listening on
	// 0.0.0.0, whatever range they are in: only an exact entry opens one
	// (a range for the workers' subnet holding it does not).
	if !ip.IsLoopback() && slices.Contains(g.local, ip) && !slices.Contains(g.Allow, netip.PrefixFrom(ip, ip.BitLen())) {
		return fmt.Errorf("%w: %s is an address of this machine (allow it with --worker-allow-cidrs %s/%d)", ErrAddressRefused, ip, ip, ip.BitLen())
	}
	for _, p := range g.Allow {
		if p.Contains(ip) {
			return nil
		}
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() ||
		cgnat.Contains(ip) || ipv4Compatible(ip) || slices.ContainsFunc(deniedRanges, func(p netip.Prefix) bool { return p.Contains(ip) }) {
		return fmt.Errorf("%w: %s is a loopback, private, link-local or reserved address (allow it with --worker-allow-cidrs)", ErrAddressRefused, ip)
	}
	return nil
}

// isSelf reports whether ip:port reaches this stitchd's listener.
func (g *AddressGuard) isSelf(ip netip.Addr, port uint16) bool {
	for _, s := range g.Self {
		if s.Port() != port {
			continue
		}
		switch {
		case s.Addr() == ip, ip.IsUnspecified(): // dialling 0.0.0.0 or :: reaches a local listener
			return true
		case s.Addr().IsUnspecified() && (ip.IsLoopback() || slices.Contains(g.local, ip)):
			return true
		}
	}
	return false
}

// CheckURL refuses a worker URL that names stitchd's own base URL (the same
// host, compared without case or a trailing dot, and port, and a path under
// the base URL's). Another name for the same address is not recognised
// unless it resolves to an address Check refuses.
func (g *AddressGuard) CheckURL(u *url.URL) error {
	if g == nil || g.SelfURL == nil || u == nil {
		return nil
	}
	host := func(u *url.URL) string { return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".") }
	if host(u) != host(g.SelfURL) || effectivePort(u) != effectivePort(g.SelfURL) {
		return nil
	}
	base := strings.TrimSuffix(g.SelfURL.EscapedPath(), "/")
	p := u.EscapedPath()
	if base == "" || strings.EqualFold(p, base) || strings.HasPrefix(strings.ToLower(p), strings.ToLower(base)+"/") {
		return fmt.Errorf("%w: %s is stitchd's own address (--base-url)", ErrAddressRefused, u.Redacted())
	}
	return nil
}

// effectivePort is u's port, or its scheme's default.
func effectivePort(u *url.URL) uint16 {
	var n uint16
	if p := u.Port(); p != "" {
		_, _ = fmt.Sscan(p, &n)
		return n
	}
	if strings.EqualFold(u.Scheme, "https") {
		return 443
	}
	return 80
}

var (
	// cgnat is the shared address space of RFC 6598.
	cgnat = netip.MustParsePrefix("100.64.0.0/10")
	// awsMetadataV6 is EC2's instance metadata service over IPv6 (its IPv4
	// one, 169.254.169.254, is link-local).
	awsMetadataV6 = netip.MustParseAddr("fd00:ec2::254")
	// deniedRanges reach private addresses by translation (NAT64, 6to4),
	// or are not for hosts (benchmarking, reserved, broadcast).
	deniedRanges = []netip.Prefix{
		netip.MustParsePrefix("64:ff9b::/96"),
		netip.MustParsePrefix("64:ff9b:1::/48"),
		netip.MustParsePrefix("2002::/16"),
		netip.MustParsePrefix("198.18.0.0/15"),
		netip.MustParsePrefix("240.0.0.0/4"),
		netip.MustParsePrefix("255.255.255.255/32"),
	}
	ipv4CompatiblePrefix = netip.MustParsePrefix("::/96")
)

// ipv4Compatible reports an IPv4-compatible IPv6 address (::a.b.c.d, RFC
// 4291, deprecated) other than :: and ::1.
func ipv4Compatible(ip netip.Addr) bool {
	return ip.Is6() && ipv4CompatiblePrefix.Contains(ip) && !ip.IsUnspecified() && !ip.IsLoopback()
}

func (g *AddressGuard) control(_, address string, _ syscall.RawConn) error { return g.Check(address) }

// guardTransport refuses a request to stitchd's own base URL before it is
// sent (CheckURL); the dialler refuses the addresses.
type guardTransport struct {
	guard *AddressGuard
	next  http.RoundTripper
}

func (t guardTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := t.guard.CheckURL(r.URL); err != nil {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, err
	}
	return t.next.RoundTrip(r)
}

// Dialer returns a dialler whose connections the guard checks (a nil
// guard checks nothing), for the other clients that connect where an
// editor says (broker triggers).
func (g *AddressGuard) Dialer(timeout time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if g != nil {
		d.Control = g.control
	}
	return d
}

// dialContext is a dialler whose connections the guard checks.
func (g *AddressGuard) dialContext() func(ctx context.Context, network, address string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: g.control}
	return d.DialContext
}
