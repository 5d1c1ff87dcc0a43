package credential

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stitchd/stitchd/internal/jsonlimit"
)

// The credential types.
const (
	TypeBearer = "bearer"
	TypeBasic  = "basic"
	TypeAPIKey = "api_key"
	TypeOAuth2 = "oauth2_client_credentials"
	TypeSMTP   = "smtp"
)

// decodeError says what is wrong with a credential's data in a person's
// words, not the decoder's ("cannot unmarshal array into Go value of type
// credential.Data").
func decodeError(typ string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		msg := jsonlimit.DecodeMessage(err)
		if te.Field == "" {
			return errors.New("data" + strings.TrimPrefix(msg, "the value") + " (the " + typ + " credential's fields)")
		}
		return errors.New("data." + msg)
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("data has no field %s for a %s credential", f, typ)
	}
	return fmt.Errorf("data is not valid JSON: %w", err)
}

// Types lists the credential types, for messages.
var Types = []string{TypeBearer, TypeBasic, TypeAPIKey, TypeOAuth2, TypeSMTP}

// Data is a credential's sealed part, by type: bearer {token}; basic
// {username, password}; api_key {header | query, value}; oauth2 client
// credentials {token_url, client_id, client_secret, scope}; smtp {host,
// port, username, password, from, tls}.
type Data struct {
	Token        string `json:"token,omitempty"`
	Username     string `json:"username,omitempty"`
	Password     string `json:"password,omitempty"`
	Header       string `json:"header,omitempty"`
	Query        string `json:"query,omitempty"`
	Value        string `json:"value,omitempty"`
	TokenURL     string `json:"token_url,omitempty"`
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	Scope        string `json:"scope,omitempty"`
	Host         string `json:"host,omitempty"`
	Port         int    `json:"port,omitempty"`
	From         string `json:"from,omitempty"`
	TLS          string `json:"tls,omitempty"`
}

// Credential is a revealed credential: what a request carrying it needs.
type Credential struct {
	Name         string
	Type         string
	Data         Data
	AllowedHosts []string
}

// maxField bounds one field of a credential's data.
const maxField = 8 << 10

// CheckType refuses a type that is none of Types.
func CheckType(typ string) error {
	if !slices.Contains(Types, typ) {
		return fmt.Errorf("type must be one of %s", strings.Join(Types, ", "))
	}
	return nil
}

// Parse reads and checks a credential's data for its type (CheckType
// first): the error names the field, for the person who wrote it.
func Parse(typ string, raw json.RawMessage) (Data, error) {
	if err := CheckType(typ); err != nil {
		return Data{}, err
	}
	var d Data
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return Data{}, decodeError(typ, err)
	}
	need := func(fields ...string) error {
		vals := map[string]string{"token": d.Token, "username": d.Username, "password": d.Password, "value": d.Value,
			"token_url": d.TokenURL, "client_id": d.ClientID, "client_secret": d.ClientSecret, "host": d.Host, "from": d.From}
		for _, f := range fields {
			if strings.TrimSpace(vals[f]) == "" {
				return fmt.Errorf("data.%s is required for a %s credential", f, typ)
			}
		}
		return nil
	}
	for _, v := range []string{d.Token, d.Username, d.Password, d.Header, d.Query, d.Value, d.TokenURL, d.ClientID, d.ClientSecret,
		d.Scope, d.Host, d.From} {
		if len(v) > maxField || strings.ContainsAny(v, "\r\n\x00") {
			return Data{}, fmt.Errorf("data: a field is longer than %d bytes or holds a line break or NUL", maxField)
		}
	}
	var err error
	switch typ {
	case TypeBearer:
		err = need("token")
		if err == nil && !headerValue(d.Token) {
			err = errors.New("data.token cannot be sent in a header: it holds a control character")
		}
	case TypeBasic:
		err = need("username", "password")
		// RFC 7617: the first colon ends the user-id, so a server would
		// read another user and password.
		if err == nil && strings.Contains(d.Username, ":") {
			err = errors.New("data.username of a basic credential cannot hold a colon (it separates the user from the password)")
		}
	case TypeAPIKey:
		err = need("value")
		if err == nil && (d.Header == "") == (d.Query == "") {
			err = errors.New("data: an api_key credential names one of header or query")
		}
		// A header no request can carry failed every send (retried, as a
		// network failure) instead of the save.
		if err == nil && d.Header != "" {
			switch {
			case !headerToken(d.Header):
				err = fmt.Errorf("data.header %q is not an HTTP header name (letters, digits and !#$%%&'*+-.^_`|~)", d.Header)
			case !headerValue(d.Value):
				err = errors.New("data.value cannot be sent in a header: it holds a control character")
			}
		}
	case TypeOAuth2:
		err = need("token_url", "client_id", "client_secret")
		if err == nil {
			if u, perr := url.Parse(d.TokenURL); perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				err = errors.New("data.token_url must be an absolute http or https URL")
			}
		}
	case TypeSMTP:
		err = need("host", "from")
		if err == nil {
			if _, perr := mail.ParseAddress(d.From); perr != nil {
				err = fmt.Errorf("data.from %q is not an email address: %v", d.From, perr)
			}
		}
		if err == nil && (d.Port < 1 || d.Port > 65535) {
			err = errors.New("data.port must be a port number")
		}
		if err == nil && d.TLS != "starttls" && d.TLS != "tls" && d.TLS != "none" {
			err = errors.New(`data.tls must be "starttls", "tls" or "none"`)
		}
	}
	if err != nil {
		return Data{}, err
	}
	return d, nil
}

// headerToken reports whether s is an HTTP header field name (RFC 9110's
// token).
func headerToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !alnum && !strings.ContainsRune("!#$%&'*+-.^_`|~", r) {
			return false
		}
	}
	return true
}

// headerValue reports whether s may be a header's value: no control
// character but a tab (Go's client refuses the request otherwise).
func headerValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// Secrets are the values of c that must never appear in what is stored
// or logged of a request (a response echoing them, an error quoting them).
func (c *Credential) Secrets() []string {
	var out []string
	for _, v := range []string{c.Data.Token, c.Data.Password, c.Data.Value, c.Data.ClientSecret} {
		if v != "" {
			out = append(out, v)
		}
	}
	if c.Type == TypeBasic {
		out = append(out, basic(c.Data.Username, c.Data.Password))
	}
	return out
}

func basic(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

// Tokens fetches and caches OAuth2 client-credentials tokens, one per
// credential (and its data: a changed secret is another key), until they
// expire. Safe for concurrent use.
type Tokens struct {
	// Client makes the token requests (the dispatcher's guarded client).
	Client *http.Client
	// Now is the clock.
	Now func() time.Time

	mu     sync.Mutex
	tokens map[string]token
}

type token struct {
	access string
	until  time.Time
}

// maxTokenTTL bounds how long a token is kept, whatever its expires_in.
const maxTokenTTL = 24 * time.Hour

// maxTokenAnswer bounds what is read of a token endpoint's answer.
const maxTokenAnswer = 64 << 10

func cacheKey(c *Credential) string {
	return c.Name + "\x00" + c.Data.TokenURL + "\x00" + c.Data.ClientID + "\x00" + c.Data.ClientSecret + "\x00" + c.Data.Scope
}

// Token is c's access token: the cached one unless it expired or fresh is
// set (a 401 with the cached one), else one fetched from its token_url.
func (t *Tokens) Token(ctx context.Context, c *Credential, fresh bool) (string, error) {
	key := cacheKey(c)
	t.mu.Lock()
	if t.tokens == nil {
		t.tokens = map[string]token{}
	}
	tok, ok := t.tokens[key]
	t.mu.Unlock()
	if ok && !fresh && t.Now().Before(tok.until) {
		return tok.access, nil
	}
	form := url.Values{"grant_type": {"client_credentials"}}
	if c.Data.Scope != "" {
		form.Set("scope", c.Data.Scope)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Data.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("credential %s: the token request cannot be made: %w", c.Name, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(c.Data.ClientID), url.QueryEscape(c.Data.ClientSecret))
	resp, err := t.Client.Do(req)
	if err != nil {
		return "", fmt.Errorf("credential %s: the token request failed: %w", c.Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenAnswer))
	if err != nil {
		return "", fmt.Errorf("credential %s: error reading the token answer: %w", c.Name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("credential %s: the token endpoint answered %d", c.Name, resp.StatusCode)
	}
	var answer struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || answer.AccessToken == "" {
		return "", fmt.Errorf("credential %s: the token endpoint's answer has no access_token", c.Name)
	}
	ttl := time.Duration(answer.ExpiresIn) * time.Second
	if ttl <= 0 {
		ttl = time.Hour
	}
	ttl = min(ttl, maxTokenTTL)
	// Renewed a little before it expires: a request under way keeps it.
	now := t.Now()
	until := now.Add(ttl - min(ttl/10, 30*time.Second))
	t.mu.Lock()
	// Expired tokens go as a new one comes: a credential's old data (a
	// rotated secret is another key) is not kept for ever.
	for k, old := range t.tokens {
		if !now.Before(old.until) {
			delete(t.tokens, k)
		}
	}
	t.tokens[key] = token{access: answer.AccessToken, until: until}
	t.mu.Unlock()
	return answer.AccessToken, nil
}

// Apply puts credential c on req: its Authorization header, its API key
// header or query parameter, or its OAuth2 access token (tokens, fresh:
// see Token). It returns the values to redact from what comes back.
func Apply(ctx context.Context, req *http.Request, c *Credential, tokens *Tokens, fresh bool) ([]string, error) {
	secrets := c.Secrets()
	switch c.Type {
	case TypeBearer:
		req.Header.Set("Authorization", "Bearer "+c.Data.Token)
	case TypeBasic:
		req.Header.Set("Authorization", "Basic "+basic(c.Data.Username, c.Data.Password))
	case TypeAPIKey:
		if c.Data.Header != "" {
			req.Header.Set(c.Data.Header, c.Data.Value)
		} else {
			q := req.URL.Query()
			q.Set(c.Data.Query, c.Data.Value)
			req.URL.RawQuery = q.Encode()
		}
	case TypeOAuth2:
		tok, err := tokens.Token(ctx, c, fresh)
		if err != nil {
			return secrets, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		secrets = append(secrets, tok)
	default:
		return secrets, fmt.Errorf("credential %s is of type %s, which an HTTP step cannot use", c.Name, c.Type)
	}
	return secrets, nil
}
