//! The work outside sessions, each on a client of its own: the probe, removing a
//! store's key prefix, and the sampler's clients with each member's view of the cluster.

use etcd_client::{Client, DeleteOptions, GetOptions};

use super::knobs::{KNOBS, Settings};
use super::net::{Connector, Fault};
use super::{ENGINE, connect};
use crate::engine::inflight::block_on;
use crate::engine::{EngineError, EngineOptions, EngineResult};

/// Runs `f` on a client of its own over every member, for work outside sessions
/// (removing a prefix, the probe), all of it within the timeout.
pub(super) fn admin<T>(
    s: &Settings,
    what: &str,
    f: impl AsyncFnOnce(&mut Client) -> Result<T, etcd_client::Error>,
) -> EngineResult<T> {
    let fail = |why: &dyn std::fmt::Display| {
        EngineError::other(format!("engine {ENGINE}: {what} at {}: {why}", s.endpoints.join(",")))
    };
    block_on(async {
        let work = async {
            let mut client = connect(s, &s.endpoints).await?;
            f(&mut client).await
        };
        match tokio::time::timeout(s.timeout, work).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(fail(&e)),
            Err(_) => Err(fail(&format_args!("no reply within the timeout of {:?}", s.timeout))),
        }
    })
}

/// `NS/`: every key of namespace `name` starts with it.
pub(super) fn prefix_of(name: &str) -> Vec<u8> {
    format!("{name}/").into_bytes()
}

/// The end of the range holding every key that starts with `prefix` (`NS0` for `NS/`).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    end
}

/// Keys deleted per request when a store is removed: one DeleteRange of a whole large
/// store (100k keys of 1 KB) takes etcd longer than the timeout, so it goes in parts.
const REMOVE_CHUNK: i64 = 5000;

pub(super) fn remove(o: &EngineOptions, name: &str) -> EngineResult<()> {
    let s = KNOBS.parse(o)?;
    let prefix = prefix_of(name);
    let end = prefix_end(&prefix);
    let what = format!("removing key prefix {name}/");
    loop {
        // The next part ends just past the last of the next REMOVE_CHUNK keys.
        let keys = GetOptions::new()
            .with_range(end.as_slice())
            .with_keys_only()
            .with_limit(REMOVE_CHUNK);
        let upto = admin(&s, &what, async |c| {
            let resp = c.get(prefix.as_slice(), Some(keys)).await?;
            Ok(resp.kvs().last().map(|kv| [kv.key(), &[0][..]].concat()))
        })?;
        let Some(upto) = upto else { return Ok(()) };
        admin(&s, &what, async |c| {
            c.delete(prefix.as_slice(), Some(DeleteOptions::new().with_range(upto)))
                .await
                .map(drop)
        })?;
    }
}

/// One member's answer to Status, as the timeline reports it.
pub(super) struct MemberStatus {
    member_id: u64,
    leader: u64,
    raft_term: u64,
    raft_index: u64,
    db_size: i64,
    db_size_in_use: i64,
}

/// Every member's Status, asked at once; None for a member that did not answer.
pub(super) async fn members_status(clients: &mut [Client]) -> Vec<Option<MemberStatus>> {
    let asks = clients.iter_mut().map(|c| async move {
        let st = c.status().await.ok()?;
        Some(MemberStatus {
            member_id: st.header().map_or(0, |h| h.member_id()),
            leader: st.leader(),
            raft_term: st.raft_term(),
            raft_index: st.raft_index(),
            db_size: st.db_size(),
            db_size_in_use: st.raft_used_db_size(),
        })
    });
    futures_util::future::join_all(asks).await
}

/// The members' view as timeline statistics: how many answer, which one leads
/// (its position in `endpoints`, from 1; 0 while none does), the highest Raft term
/// and index, and the leader's database size.
pub(super) fn report_members(members: &[Option<MemberStatus>], out: &mut Vec<(String, f64)>) {
    let up: Vec<&MemberStatus> = members.iter().flatten().collect();
    out.push(("members_up".to_string(), up.len() as f64));
    let newest = up.iter().max_by_key(|m| m.raft_term);
    let leader_id = newest.map_or(0, |m| m.leader);
    let leader = members
        .iter()
        .position(|m| m.as_ref().is_some_and(|m| m.member_id == leader_id && leader_id != 0));
    out.push(("leader".to_string(), leader.map_or(0.0, |i| (i + 1) as f64)));
    out.push(("raft_term".to_string(), newest.map_or(0.0, |m| m.raft_term as f64)));
    let index = up.iter().map(|m| m.raft_index).max().unwrap_or(0);
    out.push(("raft_index".to_string(), index as f64));
    if let Some(m) = leader.and_then(|i| members[i].as_ref()).or(newest.copied()) {
        out.push(("db_size".to_string(), m.db_size as f64));
        out.push(("db_size_in_use".to_string(), m.db_size_in_use as f64));
    }
}

/// The sampler's clients, one per member, so each member's own Status is asked.
pub(super) struct MembersConnector {
    pub(super) settings: Settings,
}

impl Connector for MembersConnector {
    type Conn = Vec<Client>;
    type Error = etcd_client::Error;
    const ENGINE: &'static str = ENGINE;

    fn address(&self) -> String {
        self.settings.endpoints.join(",")
    }

    async fn connect(&self) -> Result<Vec<Client>, etcd_client::Error> {
        let mut clients = Vec::with_capacity(self.settings.endpoints.len());
        for e in &self.settings.endpoints {
            clients.push(connect(&self.settings, std::slice::from_ref(e)).await?);
        }
        Ok(clients)
    }

    fn fault(&self, _: &Vec<Client>, _: &etcd_client::Error) -> Fault {
        Fault::Broken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_ends_where_its_keys_do() {
        assert_eq!(prefix_of("ns"), b"ns/");
        assert_eq!(prefix_end(b"ns/"), b"ns0");
    }
}
