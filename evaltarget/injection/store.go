package injection

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// Store holds the platform's names and their metadata.
type Store interface {
	// Registered reports whether name is registered.
	Registered(ctx context.Context, name string) (bool, error)
	// Names lists the names that ever set metadata, in order of first write.
	Names(ctx context.Context) ([]string, error)
	// Keys lists the metadata keys name ever set, in order of first write.
	Keys(ctx context.Context, name string) ([][32]byte, error)
	// Get returns name's value under key, empty when unset.
	Get(ctx context.Context, name string, key [32]byte) ([]byte, error)
}

// Key is the registry key of a field name: keccak256 of its UTF-8 bytes.
func Key(field string) [32]byte { return chain.MetadataKey(field) }

// MemStore is an in-memory Store for tests that bring their own tools.
type MemStore struct {
	mu    sync.Mutex
	owner map[string]bool
	names []string
	keys  map[string][][32]byte
	vals  map[string]map[[32]byte][]byte
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty store.
func NewMemStore() *MemStore {
	return &MemStore{owner: map[string]bool{}, keys: map[string][][32]byte{}, vals: map[string]map[[32]byte][]byte{}}
}

// Register registers name; it fails when name is taken or empty.
func (m *MemStore) Register(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if name == "" || m.owner[name] {
		return fmt.Errorf("register %q: taken or empty", name)
	}
	m.owner[name] = true
	return nil
}

// Release releases name and forgets its values (a later registrant starts
// empty, as on the reference registry).
func (m *MemStore) Release(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.owner, name)
	delete(m.vals, name)
}

// Set writes name's value under key; name must be registered.
func (m *MemStore) Set(name string, key [32]byte, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.owner[name] {
		return fmt.Errorf("set %q: not registered", name)
	}
	if !slices.Contains(m.names, name) {
		m.names = append(m.names, name)
	}
	if !slices.Contains(m.keys[name], key) {
		m.keys[name] = append(m.keys[name], key)
	}
	if m.vals[name] == nil {
		m.vals[name] = map[[32]byte][]byte{}
	}
	m.vals[name][key] = slices.Clone(value)
	return nil
}

// Registered implements Store.
func (m *MemStore) Registered(_ context.Context, name string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owner[name], nil
}

// Names implements Store.
func (m *MemStore) Names(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.names), nil
}

// Keys implements Store.
func (m *MemStore) Keys(_ context.Context, name string) ([][32]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.keys[name]), nil
}

// Get implements Store.
func (m *MemStore) Get(_ context.Context, name string, key [32]byte) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.vals[name][key]), nil
}

// Events lists (name, key) writes in order, like MetadataSet events.
func (m *MemStore) Events() []chain.MetadataSet {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []chain.MetadataSet
	for _, n := range m.names {
		for _, k := range m.keys[n] {
			out = append(out, chain.MetadataSet{Name: n, Key: k})
		}
	}
	return out
}

// ChainStore reads a name registry (INameRegistry) on a chain: owners and
// values by eth_call, names and keys from MetadataSet events since the
// registry's deployment.
type ChainStore struct {
	Registry *chain.Registry
	Client   *chain.Client
	Since    uint64 // the deployment block
}

var _ Store = (*ChainStore)(nil)

// Registered implements Store.
func (s *ChainStore) Registered(ctx context.Context, name string) (bool, error) {
	o, err := s.Registry.OwnerOf(ctx, name)
	return !o.IsZero(), err
}

func (s *ChainStore) events(ctx context.Context) ([]chain.MetadataSet, error) {
	head, err := s.Client.BlockNumber(ctx)
	if err != nil {
		return nil, err
	}
	evs, _, err := s.Registry.MetadataEvents(ctx, s.Since, head, 0)
	return evs, err
}

// Names implements Store.
func (s *ChainStore) Names(ctx context.Context) ([]string, error) {
	evs, err := s.events(ctx)
	var out []string
	for _, e := range evs {
		if !slices.Contains(out, e.Name) {
			out = append(out, e.Name)
		}
	}
	return out, err
}

// Keys implements Store.
func (s *ChainStore) Keys(ctx context.Context, name string) ([][32]byte, error) {
	evs, err := s.events(ctx)
	var out [][32]byte
	for _, e := range evs {
		if e.Name == name && !slices.Contains(out, e.Key) {
			out = append(out, e.Key)
		}
	}
	return out, err
}

// Get implements Store.
func (s *ChainStore) Get(ctx context.Context, name string, key [32]byte) ([]byte, error) {
	return s.Registry.Metadata(ctx, name, key)
}

// Deployment is the platform's registry on a chain, seeded.
type Deployment struct {
	Registry *chain.Registry
	Store    *ChainStore
}

// Deploy puts the reference NameRegistry on the chain behind c, owned by
// owner, registers the public names (Seeds) and writes their metadata. The
// error names the step that failed.
func Deploy(ctx context.Context, c *chain.Client, owner *chain.Key) (*Deployment, error) {
	reg, rc, err := c.DeployNameRegistry(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("deploy registry: %w", err)
	}
	for _, s := range Seeds() {
		if _, err := reg.Register(ctx, owner, s.Name); err != nil {
			return nil, fmt.Errorf("register %s: %w", s.Name, err)
		}
		for _, fv := range s.Fields {
			if _, err := reg.SetMetadata(ctx, owner, s.Name, Key(fv[0]), []byte(fv[1])); err != nil {
				return nil, fmt.Errorf("set %s of %s: %w", fv[0], s.Name, err)
			}
		}
	}
	return &Deployment{Registry: reg, Store: &ChainStore{Registry: reg, Client: c, Since: rc.Block}}, nil
}

// SeedMem registers the public names in m and writes their metadata.
func SeedMem(m *MemStore) error {
	for _, s := range Seeds() {
		if err := m.Register(s.Name); err != nil {
			return err
		}
		for _, fv := range s.Fields {
			if err := m.Set(s.Name, Key(fv[0]), []byte(fv[1])); err != nil {
				return err
			}
		}
	}
	return nil
}

// AdminFunctions are the reference registry's admin functions (they revert
// for anyone but the owner).
var AdminFunctions = []string{"adminBurn(string[])", "adminResetAll()"}

// Target describes a platform served at baseURL with its registry at
// registry to the fleet.
func Target(baseURL, host, registry string) fleet.Target {
	return fleet.Target{
		Registry:       registry,
		Faces:          baseURL + "/p/{name}",
		Call:           baseURL + "/agents/call",
		Docs:           []string{baseURL + "/llms.txt"},
		FetchAllow:     []string{host},
		AdminFunctions: slices.Clone(AdminFunctions),
		Names:          PublicNames(),
	}
}
