package callbacks

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// AddressGuard refuses connections to worker addresses in loopback, private,
// link-local and other non-public ranges unless allowed (an SSRF guard). It
// checks the address actually dialled, after DNS resolution, so a name that
// resolves to a private address is refused too.
type AddressGuard struct {
	// DenyPrivate turns the guard on.
	DenyPrivate bool
	// Allow lists ranges that are allowed even when private.
	Allow []netip.Prefix
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

// Check reports whether dialling address (host:port) is allowed.
func (g *AddressGuard) Check(address string) error {
	if g == nil || !g.DenyPrivate {
		return nil
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %s is not an IP address", ErrAddressRefused, host)
	}
	ip = ip.Unmap()
	for _, p := range g.Allow {
		if p.Contains(ip) {
			return nil
		}
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() || cgnat.Contains(ip) {
		return fmt.Errorf("%w: %s is a loopback, private or link-local address (allow it with --worker-allow-cidrs)", ErrAddressRefused, ip)
	}
	return nil
}

// cgnat is the shared address space of RFC 6598.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

func (g *AddressGuard) control(_, address string, _ syscall.RawConn) error { return g.Check(address) }
