// Package credential is what a credential is and how a request carries
// it: the types (bearer, basic, api_key, oauth2_client_credentials, smtp)
// with the checks of their data, applying one to an HTTP request, and the
// OAuth2 client-credentials token cache (a token fetched once, kept until
// it expires, fetched again after a 401). Credentials are stored sealed by
// the store (internal/secretbox) and revealed only in the dispatcher, as a
// request is sent.
package credential
