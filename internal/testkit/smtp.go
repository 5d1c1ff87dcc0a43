package testkit

import (
	"context"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"testing"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Mail is a message an SMTPServer received.
type Mail struct {
	From string
	To   []string
	// User is who authenticated ("" when nobody did).
	User string
	Data string
}

// SMTPServer is a real SMTP server on loopback (emersion/go-smtp) that
// keeps what it receives. With a password set it asks for PLAIN
// authentication (allowed without TLS: it is loopback) and refuses other
// credentials with 535; RefuseWith makes it refuse every message.
type SMTPServer struct {
	Host string
	Port int
	User string
	Pass string

	mu     sync.Mutex
	mails  []Mail
	refuse *smtp.SMTPError
}

// NewSMTPServer starts an SMTP server on 127.0.0.1, stopped when the test
// ends; user and pass ("" for none) are the login it accepts.
func NewSMTPServer(t testing.TB, user, pass string) *SMTPServer {
	t.Helper()
	s := &SMTPServer{User: user, Pass: pass}
	srv := smtp.NewServer(smtpBackend{s})
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	var lc net.ListenConfig
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("error listening for SMTP: %v", err)
	}
	addr, err := netip.ParseAddrPort(l.Addr().String())
	if err != nil {
		t.Fatalf("error reading the SMTP address: %v", err)
	}
	s.Host, s.Port = addr.Addr().String(), int(addr.Port())
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// Addr is the server's host:port.
func (s *SMTPServer) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Mails returns what the server has received.
func (s *SMTPServer) Mails() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.mails...)
}

// RefuseWith makes the server answer every message's data with code
// (e.g. 554, or 451 for a temporary refusal); 0 accepts again.
func (s *SMTPServer) RefuseWith(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if code == 0 {
		s.refuse = nil
		return
	}
	s.refuse = &smtp.SMTPError{Code: code, Message: "refused by the test server"}
}

type smtpBackend struct{ s *SMTPServer }

func (b smtpBackend) NewSession(*smtp.Conn) (smtp.Session, error) {
	return &smtpSession{s: b.s}, nil
}

type smtpSession struct {
	s    *SMTPServer
	user string
	mail Mail
}

func (ss *smtpSession) AuthMechanisms() []string {
	if ss.s.Pass == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *smtpSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != ss.s.User || pass != ss.s.Pass {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "invalid credentials"}
		}
		ss.user = user
		return nil
	}), nil
}

func (ss *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.Pass != "" && ss.user == "" {
		return smtp.ErrAuthRequired
	}
	ss.mail = Mail{From: from, User: ss.user}
	return nil
}

func (ss *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.mail.To = append(ss.mail.To, to)
	return nil
}

func (ss *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	ss.s.mu.Lock()
	defer ss.s.mu.Unlock()
	if ss.s.refuse != nil {
		return ss.s.refuse
	}
	ss.mail.Data = string(b)
	ss.s.mails = append(ss.s.mails, ss.mail)
	return nil
}

func (ss *smtpSession) Reset() { ss.mail = Mail{User: ss.user} }

func (ss *smtpSession) Logout() error { return nil }

var _ smtp.AuthSession = (*smtpSession)(nil)
