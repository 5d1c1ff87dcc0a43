package callbacks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/credential"
)

// mailRow is an Email step's row body (handlers.EmailMessage): the
// rendered message.
type mailRow struct {
	To      []string `json:"to"`
	Cc      []string `json:"cc"`
	Bcc     []string `json:"bcc"`
	Subject string   `json:"subject"`
	Text    string   `json:"text"`
	HTML    string   `json:"html"`
}

// outgoingMail is a message ready to go: its smtp credential revealed and
// allowed to reach its server.
type outgoingMail struct {
	msg  *mail.Msg
	cred *credential.Credential
	id   string
}

// sendMail sends an Email step's message (a DispatchEmail row) and fills r
// with its id, or why it was not sent; false when nothing was sent and
// there is nothing to record (the claim was lost). Recorded as sent before
// it goes, as a request is (sendOnce).
func (d *Dispatcher) sendMail(ctx context.Context, c engine.ClaimedDispatch, r *engine.Response) bool {
	return d.sendOnce(ctx, c, "message", func(mctx context.Context) (func(time.Duration), bool) {
		m, ok := d.prepareMail(mctx, scope{runID: c.RunID}, c.ID, c.Request, c.Payload, r)
		if !ok {
			return nil, false
		}
		return func(timeout time.Duration) { d.deliverMail(mctx, m, timeout, r) }, true
	})
}

// prepareMail reveals the message's credential (an smtp one whose
// allowed_hosts name its server) and builds the message. Not ok: r holds
// why nothing may be sent.
func (d *Dispatcher) prepareMail(ctx context.Context, sc scope, id string, rq *engine.HTTPRequest, payload []byte, r *engine.Response) (*outgoingMail, bool) {
	refuse := func(msg string) (*outgoingMail, bool) {
		r.Error, r.NoRetry = "message not sent: "+msg, true
		return nil, false
	}
	var row mailRow
	if err := json.Unmarshal(payload, &row); err != nil {
		return refuse(fmt.Sprintf("its row cannot be read: %v", err))
	}
	if d.cfg.Credentials == nil {
		return refuse("this server reads no credentials")
	}
	cred, err := d.cfg.Credentials.Credential(ctx, sc.ws, sc.runID, rq.Credential)
	if err != nil {
		r.Error, r.NoRetry = "message not sent: "+err.Error(), errors.Is(err, engine.ErrSecret)
		return nil, false
	}
	if cred.Type != credential.TypeSMTP {
		return refuse(fmt.Sprintf("credential %q is a %s credential, not an smtp one", cred.Name, cred.Type))
	}
	server := net.JoinHostPort(cred.Data.Host, strconv.Itoa(cred.Data.Port))
	if !engine.HostAllowed(cred.AllowedHosts, &url.URL{Scheme: "smtp", Host: server}) {
		return refuse(fmt.Sprintf("credential_host_refused: credential %q may be sent only to %s (its allowed_hosts), not to %s",
			cred.Name, strings.Join(cred.AllowedHosts, ", "), server))
	}
	m := mail.NewMsg(mail.WithNoDefaultUserAgent())
	if err := m.From(cred.Data.From); err != nil {
		return refuse(fmt.Sprintf("the credential's from address: %v", err))
	}
	for _, set := range []struct {
		f    func(...string) error
		name string
		to   []string
	}{{m.To, "to", row.To}, {m.Cc, "cc", row.Cc}, {m.Bcc, "bcc", row.Bcc}} {
		if len(set.to) == 0 {
			continue
		}
		if err := set.f(set.to...); err != nil {
			return refuse(fmt.Sprintf("%s: %v", set.name, err))
		}
	}
	m.Subject(row.Subject)
	switch {
	case row.Text != "" && row.HTML != "":
		m.SetBodyString(mail.TypeTextPlain, row.Text)
		m.AddAlternativeString(mail.TypeTextHTML, row.HTML)
	case row.HTML != "":
		m.SetBodyString(mail.TypeTextHTML, row.HTML)
	default:
		m.SetBodyString(mail.TypeTextPlain, row.Text)
	}
	// The row's id names the message: one message an attempt, told apart
	// by a receiver that logs it.
	mid := id + "@" + domainOf(cred.Data.From)
	m.SetMessageIDWithValue(mid)
	return &outgoingMail{msg: m, cred: cred, id: "<" + mid + ">"}, true
}

// deliverMail sends m within timeout and fills r: 250 and {"message_id"},
// or the failure, retried unless the server refused it for good (5xx).
func (d *Dispatcher) deliverMail(ctx context.Context, m *outgoingMail, timeout time.Duration, r *engine.Response) {
	dialer := d.cfg.Dialer
	if dialer == nil {
		dialer = &net.Dialer{}
	}
	opts := []mail.Option{mail.WithPort(m.cred.Data.Port), mail.WithTimeout(timeout), mail.WithDialContextFunc(dialer.DialContext)}
	switch m.cred.Data.TLS {
	case "tls":
		opts = append(opts, mail.WithSSL())
	case "none":
		opts = append(opts, mail.WithTLSPolicy(mail.NoTLS))
	default:
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory))
	}
	if m.cred.Data.Username != "" {
		// Over TLS, the best mechanism the server offers; without it,
		// PLAIN, which the library sends only to a server on loopback (a
		// password never crosses a network in clear).
		auth := mail.SMTPAuthAutoDiscover
		if m.cred.Data.TLS == "none" {
			auth = mail.SMTPAuthPlain
		}
		opts = append(opts, mail.WithSMTPAuth(auth),
			mail.WithUsername(m.cred.Data.Username), mail.WithPassword(m.cred.Data.Password))
	}
	hide := engine.NewRedactor(m.cred.Secrets())
	client, err := mail.NewClient(m.cred.Data.Host, opts...)
	if err == nil {
		err = client.DialAndSendWithContext(ctx, m.msg)
	}
	if err != nil {
		r.Error, r.NoRetry = hide.String("SMTP: "+err.Error()), permanentMailError(err)
		return
	}
	r.Status, r.Body = 250, mustJSON(map[string]string{"message_id": m.id})
}

// permanentMailError reports whether the server refused the message for
// good (an SMTP 5xx reply): sending it again would be refused again. Not
// reaching the server, or a 4xx, is worth another attempt.
func permanentMailError(err error) bool {
	if se, ok := errors.AsType[*mail.SendError](err); ok {
		return se.ErrorCode() >= 500
	}
	if te, ok := errors.AsType[*textproto.Error](err); ok {
		return te.Code >= 500
	}
	return false
}

func domainOf(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return strings.Trim(addr[i+1:], "<> ")
	}
	return "stitchd"
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // a map of strings always encodes
	}
	return b
}
