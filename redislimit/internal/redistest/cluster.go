package redistest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterSlots is the number of hash slots of a Redis cluster.
const clusterSlots = 16384

// clusterArgs are the arguments of every cluster node. A node timeout of
// three seconds keeps failovers quick, and is long enough that a loaded
// machine which stalls a node (or the whole machine) for a second does not
// make it count the other masters as failing: a master that finds itself
// in the minority answers CLUSTERDOWN, on a cluster none of whose nodes has
// failed, until a node timeout after the others answer again. A validity
// factor of 0 lets any replica take over, however long it has been
// disconnected from its master; and a diskless sync delay of 0 lets a
// master feed a new replica at once rather than after five seconds.
var clusterArgs = []string{
	"--cluster-enabled", "yes",
	"--cluster-config-file", "nodes.conf",
	"--cluster-node-timeout", "3000",
	"--cluster-replica-validity-factor", "0",
	"--repl-diskless-sync-delay", "0",
}

// Cluster is a Redis cluster of redis-server processes on 127.0.0.1, started
// by StartCluster. Apart from Client and Addrs, its methods query the nodes
// that are running and not paused.
type Cluster struct {
	// Nodes are all the servers of the cluster, killed or not, in the order
	// given to redis-cli --cluster create: the first ones started as masters,
	// the others as their replicas.
	Nodes []*Server

	tb     testing.TB
	mu     sync.Mutex
	client *redis.ClusterClient
}

// StartCluster starts masters*(1+replicasPerMaster) cluster-enabled servers
// (each as Start would, in its own directory), joins them with
// `redis-cli --cluster create`, and waits until every node reports
// cluster_state:ok with all 16384 slots assigned, all nodes agree on the slot
// owners and every replica is linked to its master. masters must be at least
// 3. Like Start, it fails tb if the cluster does not come up and skips or
// fails it when redis-server or redis-cli is missing.
func StartCluster(tb testing.TB, masters, replicasPerMaster int) *Cluster {
	tb.Helper()
	Require(tb)
	cli := requireBinary(tb, "redis-cli", "redis-tools")
	if masters < 3 {
		tb.Fatalf("redistest: a Redis cluster needs at least 3 masters, got %d", masters)
	}
	if replicasPerMaster < 0 {
		tb.Fatalf("redistest: negative replicasPerMaster %d", replicasPerMaster)
	}

	c := &Cluster{tb: tb}
	n := masters * (1 + replicasPerMaster)
	for range n {
		c.Nodes = append(c.Nodes, startServer(tb, true, clusterArgs))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicasPerMaster), "--cluster-yes")
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.WaitDelay = time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}

	if err := c.waitUntil(10*time.Second, c.checkReady); err != nil {
		tb.Fatalf("redistest: cluster did not become ready: %v", err)
	}
	return c
}

// Addrs returns the addresses of all nodes, in the order of Nodes.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		addrs[i] = s.Addr
	}
	return addrs
}

// Client returns a go-redis cluster client seeded with all node addresses,
// created on the first call and closed by the test's cleanup. Context
// deadlines bound each command (ContextTimeoutEnabled), each connection
// attempt dials once (DialerRetries 1), and the client refreshes its slot map
// when it is older than a second (ClusterStateReloadInterval), instead of
// go-redis's default of a minute, during which it keeps sending the commands
// of a killed master's slots to that master. WaitOK and WaitFailover also
// refresh it before they return.
func (c *Cluster) Client() *redis.ClusterClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client == nil {
		c.client = redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:                      c.Addrs(),
			DialerRetries:              1,
			ClusterStateReloadInterval: time.Second,
			ContextTimeoutEnabled:      true,
		})
		client := c.client
		c.tb.Cleanup(func() { _ = client.Close() })
	}
	return c.client
}

// WaitOK waits until every node that is running and not paused reports
// cluster_state:ok with all 16384 slots assigned, and all of them agree on
// which node owns each slot. It returns an error describing the last thing
// that was wrong if that does not happen within timeout.
func (c *Cluster) WaitOK(timeout time.Duration) error {
	if err := c.waitUntil(timeout, func() error { return c.checkOK(nil) }); err != nil {
		return err
	}
	c.refreshClient()
	return nil
}

// WaitFailover waits until the slots of dead, a master that has been killed
// or paused, have been taken over by one of its replicas, and the cluster is
// ok again as WaitOK defines it. It returns an error if dead is still
// reachable or if that does not happen within timeout.
func (c *Cluster) WaitFailover(dead *Server, timeout time.Duration) error {
	if dead.reachable() {
		return fmt.Errorf("redistest: WaitFailover: %s is still running; Kill or Pause it first", dead.Addr)
	}
	if err := c.waitUntil(timeout, func() error { return c.checkOK(dead) }); err != nil {
		return err
	}
	c.refreshClient()
	return nil
}

// refreshClient makes the cluster client, if Client has been called, reload
// its slot map now. ForEachMaster reloads the map synchronously before it
// visits the masters; the visit itself does nothing.
func (c *Cluster) refreshClient() {
	c.mu.Lock()
	client := c.client
	c.mu.Unlock()
	if client == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = client.ForEachMaster(ctx, func(context.Context, *redis.Client) error { return nil })
}

// Masters returns the nodes that are masters now, in the order of Nodes. A
// node that answers is asked with ROLE; a paused node counts as a master if a
// node that answers sees it as a master that has not failed. Killed nodes are
// left out. Right after a failover or a restart the nodes may still disagree;
// call WaitOK first for a settled answer.
func (c *Cluster) Masters() []*Server {
	c.tb.Helper()
	var views []string // CLUSTER NODES of a node that answers, fetched once
	var masters []*Server
	for _, s := range c.Nodes {
		switch {
		case s.reachable():
			ctx, cancel := adminCtx()
			role, err := s.adminClient().Do(ctx, "ROLE").Slice()
			cancel()
			if err != nil {
				c.tb.Fatalf("redistest: ROLE on %s: %v", s.Addr, err)
			}
			if len(role) > 0 && role[0] == "master" {
				masters = append(masters, s)
			}
		case s.isPaused():
			if views == nil {
				views = c.clusterNodesView()
			}
			for _, line := range views {
				f := strings.Fields(line)
				if len(f) < 3 || portOf(strings.SplitN(f[1], "@", 2)[0]) != s.port {
					continue
				}
				flags := strings.Split(f[2], ",")
				if slices.Contains(flags, "master") && !slices.Contains(flags, "fail") && !slices.Contains(flags, "fail?") {
					masters = append(masters, s)
				}
			}
		}
	}
	return masters
}

// clusterNodesView returns the lines of CLUSTER NODES from the first node that
// answers.
func (c *Cluster) clusterNodesView() []string {
	c.tb.Helper()
	var lastErr error = errors.New("no node is running")
	for _, s := range c.Nodes {
		if !s.reachable() {
			continue
		}
		ctx, cancel := adminCtx()
		out, err := s.adminClient().ClusterNodes(ctx).Result()
		cancel()
		if err == nil {
			return strings.Split(strings.TrimSpace(out), "\n")
		}
		lastErr = err
	}
	c.tb.Fatalf("redistest: CLUSTER NODES: %v", lastErr)
	return nil
}

// MasterOf returns the master serving the slot of key now, as most of the
// nodes that answer see it (CLUSTER KEYSLOT, then CLUSTER SLOTS on each
// node), or nil if none of them knows an owner among Nodes. Call WaitOK first
// for a settled answer after a failover.
func (c *Cluster) MasterOf(key string) *Server {
	c.tb.Helper()
	slot := int64(-1)
	votes := make(map[*Server]int)
	var lastErr error = errors.New("no node is running")
	for _, s := range c.Nodes {
		if !s.reachable() {
			continue
		}
		ctx, cancel := adminCtx()
		client := s.adminClient()
		if slot < 0 {
			n, err := client.ClusterKeySlot(ctx, key).Result()
			if err != nil {
				cancel()
				lastErr = err
				continue
			}
			slot = n
		}
		//lint:ignore SA1019 CLUSTER SHARDS needs Redis 7; CLUSTER SLOTS works on every version
		ranges, err := client.ClusterSlots(ctx).Result()
		cancel()
		if err != nil {
			lastErr = err
			continue
		}
		for _, r := range ranges {
			if int64(r.Start) <= slot && slot <= int64(r.End) && len(r.Nodes) > 0 {
				if owner := c.nodeByAddr(r.Nodes[0].Addr); owner != nil {
					votes[owner]++
				}
			}
		}
	}
	if slot < 0 {
		c.tb.Fatalf("redistest: CLUSTER KEYSLOT %q: %v", key, lastErr)
	}
	var best *Server
	for _, s := range c.Nodes {
		if votes[s] > votes[best] {
			best = s
		}
	}
	return best
}

// nodeByAddr returns the node listening on the port of addr. All nodes are on
// 127.0.0.1, so the port is enough, and it copes with a node that reports
// its own address without an IP.
func (c *Cluster) nodeByAddr(addr string) *Server {
	p := portOf(addr)
	for _, s := range c.Nodes {
		if s.port == p {
			return s
		}
	}
	return nil
}

// waitUntil calls check every 50 ms until it returns nil, and returns its last
// error if that does not happen within timeout.
func (c *Cluster) waitUntil(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkOK implements WaitOK and, with a non-nil dead, WaitFailover: dead is
// left out and must own no slot.
func (c *Cluster) checkOK(dead *Server) error {
	var ref string
	var refAddr string
	asked := 0
	for _, s := range c.Nodes {
		if s == dead || !s.reachable() {
			continue
		}
		asked++
		ctx, cancel := adminCtx()
		client := s.adminClient()
		info, err := client.ClusterInfo(ctx).Result()
		if err != nil {
			cancel()
			return fmt.Errorf("CLUSTER INFO on %s: %w", s.Addr, err)
		}
		fields := parseInfo(info)
		if st := fields["cluster_state"]; st != "ok" {
			cancel()
			return fmt.Errorf("%s reports cluster_state:%s", s.Addr, st)
		}
		if n := fields["cluster_slots_assigned"]; n != strconv.Itoa(clusterSlots) {
			cancel()
			return fmt.Errorf("%s reports cluster_slots_assigned:%s", s.Addr, n)
		}
		//lint:ignore SA1019 CLUSTER SHARDS needs Redis 7; CLUSTER SLOTS works on every version
		ranges, err := client.ClusterSlots(ctx).Result()
		cancel()
		if err != nil {
			return fmt.Errorf("CLUSTER SLOTS on %s: %w", s.Addr, err)
		}
		owners := slotOwners(ranges)
		if dead != nil && strings.Contains(owners, " "+strconv.Itoa(dead.port)+";") {
			return fmt.Errorf("%s still sees %s as the owner of slots", s.Addr, dead.Addr)
		}
		if ref == "" {
			ref, refAddr = owners, s.Addr
		} else if owners != ref {
			return fmt.Errorf("%s and %s disagree on the slot owners", refAddr, s.Addr)
		}
	}
	if asked == 0 {
		return errors.New("no node is running")
	}
	return nil
}

// checkReady is checkOK plus: every node knows every other node, and every
// replica's link to its master is up.
func (c *Cluster) checkReady() error {
	if err := c.checkOK(nil); err != nil {
		return err
	}
	for _, s := range c.Nodes {
		ctx, cancel := adminCtx()
		client := s.adminClient()
		info, err := client.ClusterInfo(ctx).Result()
		if err != nil {
			cancel()
			return fmt.Errorf("CLUSTER INFO on %s: %w", s.Addr, err)
		}
		if n := parseInfo(info)["cluster_known_nodes"]; n != strconv.Itoa(len(c.Nodes)) {
			cancel()
			return fmt.Errorf("%s knows %s nodes of %d", s.Addr, n, len(c.Nodes))
		}
		repl, err := client.Info(ctx, "replication").Result()
		cancel()
		if err != nil {
			return fmt.Errorf("INFO replication on %s: %w", s.Addr, err)
		}
		fields := parseInfo(repl)
		if fields["role"] == "slave" && fields["master_link_status"] != "up" {
			return fmt.Errorf("replica %s: master_link_status:%s", s.Addr, fields["master_link_status"])
		}
	}
	return nil
}

// slotOwners renders CLUSTER SLOTS as "start-end port;" entries in slot
// order, naming each range's master by port.
func slotOwners(ranges []redis.ClusterSlot) string {
	ranges = slices.Clone(ranges)
	slices.SortFunc(ranges, func(a, b redis.ClusterSlot) int { return a.Start - b.Start })
	var b strings.Builder
	for _, r := range ranges {
		owner := -1
		if len(r.Nodes) > 0 {
			owner = portOf(r.Nodes[0].Addr)
		}
		fmt.Fprintf(&b, "%d-%d %d;", r.Start, r.End, owner)
	}
	return b.String()
}

// parseInfo parses the "key:value" lines of INFO and CLUSTER INFO replies.
func parseInfo(s string) map[string]string {
	m := make(map[string]string)
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok {
			m[k] = v
		}
	}
	return m
}
