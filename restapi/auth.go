package restapi

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Credentials are the one user of the API: name, token (its password) and the secret key
// that signs the JWTs of the reference's token flow (HS256).
type Credentials struct {
	User, Token, SecretKey string
}

// ReadCredentials reads the files user, token and secret-key of dir (the mounted Secret).
func ReadCredentials(dir string) (Credentials, error) {
	var c Credentials
	for _, f := range []struct {
		name string
		dst  *string
	}{{"user", &c.User}, {"token", &c.Token}, {"secret-key", &c.SecretKey}} {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			return c, fmt.Errorf("reading the API credentials: %w (the Secret must have the keys user, token and secret-key)", err)
		}
		*f.dst = strings.TrimSpace(string(b))
		if *f.dst == "" {
			return c, fmt.Errorf("the API credentials' %s (%s) is empty", f.name, filepath.Join(dir, f.name))
		}
	}
	return c, nil
}

var b64 = base64.RawURLEncoding

var errExpired = errors.New("the token has expired: ask for a new one (POST /v1/token)")

// signJWT makes an HS256 JWT of claims.
func signJWT(claims map[string]any, key []byte) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	head := b64.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + b64.EncodeToString(payload)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(head))
	return head + "." + b64.EncodeToString(mac.Sum(nil)), nil
}

// verifyJWT checks an HS256 JWT's signature (in constant time) and expiry, and returns its claims.
func verifyJWT(token string, key []byte, now time.Time) (map[string]any, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errors.New("not a JWT")
	}
	var header struct {
		Alg string `json:"alg"`
	}
	hb, err := b64.DecodeString(parts[0])
	if err != nil || json.Unmarshal(hb, &header) != nil {
		return nil, errors.New("not a JWT: bad header")
	}
	if header.Alg != "HS256" {
		return nil, fmt.Errorf("JWT algorithm %q: only HS256 is accepted", header.Alg)
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil {
		return nil, errors.New("not a JWT: bad signature encoding")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	if !hmac.Equal(sig, mac.Sum(nil)) {
		return nil, errors.New("JWT signature does not match")
	}
	pb, err := b64.DecodeString(parts[1])
	if err != nil {
		return nil, errors.New("not a JWT: bad payload encoding")
	}
	var claims map[string]any
	if err := json.Unmarshal(pb, &claims); err != nil {
		return nil, errors.New("not a JWT: bad payload")
	}
	if exp, ok := claims["exp"].(float64); ok && now.Unix() >= int64(exp) {
		return nil, errExpired
	}
	return claims, nil
}

// equal compares secrets in constant time.
func equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// MaxTokenLifetime caps how long an access token may be valid: a token that leaks is good
// for this long at most.
const MaxTokenLifetime = 24 * time.Hour

// Authenticator checks requests against one set of credentials.
type Authenticator struct {
	Creds Credentials
	// SigningKey signs and checks the access tokens of /v1/token. It is not the secret key,
	// which every client holds to ask for tokens: with it a client could mint an access token
	// of any lifetime. NewAuthenticator draws it at random, so it lives only in the server's
	// memory and a restarted server refuses every earlier token.
	SigningKey []byte
	// TokenLifetime is how long an access token from /v1/token is valid (at most
	// MaxTokenLifetime).
	TokenLifetime time.Duration
	Now           func() time.Time
}

// NewAuthenticator checks the lifetime and draws a signing key no client ever sees.
func NewAuthenticator(creds Credentials, lifetime time.Duration) (*Authenticator, error) {
	if lifetime <= 0 || lifetime > MaxTokenLifetime {
		return nil, fmt.Errorf("token lifetime %s: give a duration above 0 and at most %s", lifetime, MaxTokenLifetime)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("drawing the access tokens' signing key: %w", err)
	}
	return &Authenticator{Creds: creds, SigningKey: key, TokenLifetime: lifetime}, nil
}

func (a *Authenticator) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Exchange checks the client's signed request for a token (the reference's POST /v1/token:
// Authorization: Bearer JWT{user, pass, scope: token}, signed with the secret key) or a Basic
// user:token, and returns a new access token.
func (a *Authenticator) Exchange(authorization string) (string, error) {
	if user, pass, ok := basicAuth(authorization); ok {
		if !a.userToken(user, pass) {
			return "", errors.New("wrong user or token")
		}
	} else {
		raw, ok := strings.CutPrefix(authorization, "Bearer ")
		if !ok {
			return "", errors.New("no credentials: send Authorization: Bearer <JWT of user, pass, scope signed with the secret key>, or Basic user:token")
		}
		claims, err := verifyJWT(strings.TrimSpace(raw), []byte(a.Creds.SecretKey), a.now())
		if err != nil {
			return "", fmt.Errorf("the token request: %w (sign it with the secret key)", err)
		}
		user, _ := claims["user"].(string)
		pass, _ := claims["pass"].(string)
		if scope, _ := claims["scope"].(string); scope != "token" {
			return "", errors.New(`the JWT's scope must be "token"`)
		}
		if !a.userToken(user, pass) {
			return "", errors.New("wrong user or token")
		}
	}
	return signJWT(map[string]any{
		"sub":   a.Creds.User,
		"scope": "access",
		"exp":   a.now().Add(a.TokenLifetime).Unix(),
	}, a.SigningKey)
}

// Check accepts an access token from Exchange (Bearer) or Basic user:token.
func (a *Authenticator) Check(authorization string) error {
	if authorization == "" {
		return errors.New("no credentials")
	}
	if user, pass, ok := basicAuth(authorization); ok {
		if !a.userToken(user, pass) {
			return errors.New("wrong user or token")
		}
		return nil
	}
	raw, ok := strings.CutPrefix(authorization, "Bearer ")
	if !ok {
		return errors.New("unsupported Authorization scheme: use Bearer or Basic")
	}
	claims, err := verifyJWT(strings.TrimSpace(raw), a.SigningKey, a.now())
	if errors.Is(err, errExpired) {
		return err
	}
	if err != nil {
		return fmt.Errorf("not an access token of this server (%w): ask for one (POST /v1/token)", err)
	}
	sub, _ := claims["sub"].(string)
	scope, _ := claims["scope"].(string)
	if scope != "access" || !equal(sub, a.Creds.User) {
		return errors.New("not an access token of this server: ask for one (POST /v1/token)")
	}
	exp, ok := claims["exp"].(float64)
	if !ok {
		return errors.New("the access token has no expiry")
	}
	// Only this server signs access tokens, and never for longer: one that claims more was
	// not made here.
	if time.Unix(int64(exp), 0).After(a.now().Add(a.TokenLifetime)) {
		return fmt.Errorf("the access token is valid for longer than this server gives (%s): ask for a new one (POST /v1/token)", a.TokenLifetime)
	}
	return nil
}

// userToken compares both in constant time, both always.
func (a *Authenticator) userToken(user, token string) bool {
	u := equal(user, a.Creds.User)
	t := equal(token, a.Creds.Token)
	return u && t
}

func basicAuth(authorization string) (user, pass string, ok bool) {
	raw, found := strings.CutPrefix(authorization, "Basic ")
	if !found {
		return "", "", false
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(raw))
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(b), ":")
}
