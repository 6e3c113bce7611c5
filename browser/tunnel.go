package browser

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/qafleet/fleetd/clip"
)

// The proxy reads inside every tunnel. A CONNECT's TLS ends at the proxy,
// under a certificate for the requested host made with a key only this
// browser trusts (--ignore-certificate-errors-spki-list names that key, and
// nothing else), and the proxy opens its own TLS connection to the site,
// verifying the site's certificate. So every request in a tunnel, whatever
// target made it (a page, a worker, a service worker), is checked as a
// plain one is: the allowlist with its full URL, the dial for its method,
// and a WebSocket handshake (ws:// or wss://) as a write.

// interceptor holds the proxy's TLS identity: one key, a certificate per
// host signed by it.
type interceptor struct {
	key   *ecdsa.PrivateKey
	spki  string         // base64 SHA-256 of the key's SubjectPublicKeyInfo
	roots *x509.CertPool // trusted for the sites' certificates; nil: the system's

	mu    sync.Mutex
	certs map[string]*tls.Certificate
}

func newInterceptor(roots *x509.CertPool) (*interceptor, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(der)
	return &interceptor{key: key, spki: base64.StdEncoding.EncodeToString(sum[:]), roots: roots, certs: map[string]*tls.Certificate{}}, nil
}

// cert returns the proxy's certificate for host.
func (i *interceptor) cert(host string) (*tls.Certificate, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if c, ok := i.certs[host]; ok {
		return c, nil
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host, Organization: []string{"fleetd browser proxy"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &i.key.PublicKey, i.key)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: i.key}
	i.certs[host] = c
	return c, nil
}

// bufConn is a net.Conn whose reads come through a bufio.Reader that may
// hold bytes already read from it.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// serveTunnel serves the tunnel to hp (down from the browser, up to the
// site, both closed by the caller) request by request: TLS is ended here
// and opened again to the site; each request passes the allowlist and, if
// it writes, the dial; a WebSocket handshake let through turns the tunnel
// into a splice. Anything but TLS or HTTP is refused.
func (p *proxy) serveTunnel(up, down net.Conn, br *bufio.Reader, hp string) {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		p.record(hp + " (not host:port)")
		return
	}
	down.SetReadDeadline(time.Now().Add(30 * time.Second))
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	secure := first[0] == 0x16 // a TLS handshake record
	if secure {
		if p.mitm == nil {
			p.record(hp + " (TLS, and no interceptor)")
			return
		}
		tdown := tls.Server(&bufConn{Conn: down, r: br}, &tls.Config{
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return p.mitm.cert(host) },
			NextProtos:     []string{"http/1.1"},
		})
		if err := tdown.Handshake(); err != nil {
			p.record(hp + " (TLS with the browser: " + err.Error() + ")")
			return
		}
		down, br = tdown, bufio.NewReader(tdown)
		up = tls.Client(up, &tls.Config{ServerName: host, RootCAs: p.mitm.roots, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	}
	down.SetReadDeadline(time.Time{})
	origin := siteOrigin(secure, host, port)
	ur := bufio.NewReader(up)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			if err != io.EOF && !strings.Contains(err.Error(), "closed") {
				p.record(hp + " (not HTTP: " + clip.Text(err.Error(), 80) + ")")
			}
			return
		}
		ws := strings.EqualFold(req.Header.Get("Upgrade"), "websocket")
		target := origin + req.URL.RequestURI()
		if err := p.allow(target); err != nil {
			p.record(req.Method + " " + target)
			answer(down, http.StatusForbidden, err.Error())
			return
		}
		what := Write{Method: req.Method, URL: target}
		if ws {
			what = Write{Method: methodWebSocket, URL: "ws" + strings.TrimPrefix(target, "http")}
		}
		if ws || isWrite(req.Method) {
			if err := p.mayWrite(what); err != nil {
				p.record(what.Method + " " + what.URL)
				answer(down, http.StatusForbidden, err.Error())
				return
			}
		}
		if !ws {
			for _, h := range hopHeaders {
				req.Header.Del(h)
			}
		}
		if err := req.Write(up); err != nil {
			p.upstreamFailed(down, hp, err)
			return
		}
		resp, err := http.ReadResponse(ur, req)
		if err != nil {
			p.upstreamFailed(down, hp, err)
			return
		}
		if ws && resp.StatusCode == http.StatusSwitchingProtocols {
			resp.Write(down)
			splice(up, down, ur, br)
			return
		}
		if !ws {
			for _, h := range hopHeaders {
				resp.Header.Del(h)
			}
		}
		err = resp.Write(down)
		resp.Body.Close()
		if err != nil || resp.Close || req.Close || ws {
			return
		}
	}
}

// siteOrigin is the scheme and authority of a tunnel's requests, the port
// left out when it is the scheme's default (as the browser writes URLs).
func siteOrigin(secure bool, host, port string) string {
	scheme, def := "http", "80"
	if secure {
		scheme, def = "https", "443"
	}
	if port == def {
		return scheme + "://" + hostForURL(host)
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

func hostForURL(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// upstreamFailed answers a request the site could not be asked: a refusal
// by the dialler's checks or the site's certificate is recorded as one.
func (p *proxy) upstreamFailed(down net.Conn, hp string, err error) {
	var cerr *tls.CertificateVerificationError
	if errors.As(err, &cerr) {
		p.record(hp + " (the site's certificate: " + clip.Text(cerr.Error(), 120) + ")")
	}
	answer(down, http.StatusBadGateway, err.Error())
}

// answer writes a final response and ends the connection.
func answer(w io.Writer, status int, msg string) {
	body := "fleetd browser proxy: " + msg + "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", status, http.StatusText(status), len(body), body)
}

// splice copies both ways until either side ends, bytes already buffered
// first.
func splice(up, down net.Conn, ur, dr *bufio.Reader) {
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, dr); done <- struct{}{} }()
	go func() { io.Copy(down, ur); done <- struct{}{} }()
	<-done
	up.Close()
	down.Close()
	<-done
}
