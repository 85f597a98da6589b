//! Prime's router: which agents a request is for, learned when the runtime
//! starts from what the configuration says about each agent — its
//! `examples` (requests as people write them), its description, its
//! capabilities and its keywords. Each text becomes a TF-IDF weighted
//! vector of features ([`super::text`]); a logistic regression
//! ([`super::softmax`]) learns from them which agent a request is for, and
//! its probability is the agent's score. Each clause of a request is
//! scored on its own, so a message that asks for two things reaches two
//! agents; a clause whose best score is under [`THRESHOLD`], or whose best
//! match is the orchestrator itself (its own examples: small talk, requests
//! no specialist serves), picks nobody. The example closest to the request
//! is kept to show why. In-process, no model file, no network: a request
//! costs microseconds (docs/ROUTING.md has the evaluation and the cost).

use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock, Mutex};

use rustc_hash::FxHashMap;

use super::softmax::Softmax;
use super::text::{
    Feature, Features, Kind, base, clause_pieces, clauses, content, feature, features, features_of, kind,
    purchase_line, purchase_list, row, shapes, table, without_names,
};
use crate::config::AgentSpec;

/// The score (the router's probability) from which an agent is picked for
/// a clause: chosen by leave-one-round-out on the seen requests (docs/ROUTING.md).
pub(crate) const THRESHOLD: f64 = 0.3;
/// A score that needs no earlier message to be sure of: a short follow-up
/// (`and in September?`) under it goes where the conversation was.
pub(crate) const STRONG: f64 = 0.7;
/// The score at which a short piece of a clause (`… and is it deductible`)
/// reaches its own agent beside the one its clause's other piece asks for.
pub(crate) const PIECE: f64 = 0.9;
/// How sure a later clause must be of an agent to add it beside the ones
/// before it (round 15, by leave-one-round-out: 0.7 before, 0.9 lost
/// requests for two things).
const SECOND: f64 = 0.8;
/// How sure the first clause must be of its agent to stay beside a later
/// clause's that is [`SECOND`] sure (round 17, by leave-one-round-out; 0.9
/// and 0.95 lost more requests for two things).
const LEAD: f64 = 0.8;
/// A word no text used is corrected to a known word used at least this
/// often ([`Router::spelled`]).
const COMMON: u32 = 5;

/// A clause's first word is a maker's own verb ([`Router::acts_on`]) only
/// when the texts of at most this many agents start with it (`email`,
/// `schedule`; not `make`).
const HEAD_SPREAD: u32 = 2;
/// A word the texts of at least this many agents use says what is looked
/// at (`spending`, `expenses`, `october`), not who should look.
const SPREAD: u32 = 4;

type Vector = Vec<(u32, f32)>;
/// Routers learned in this process, by the hash of the texts they learned from.
type Learned = Vec<(u64, Arc<Router>)>;

struct Doc {
    agent: usize,
    text: String,
    vector: Vector,
}

/// What the router learned from a team's configuration.
pub(crate) struct Router {
    /// Agent slugs; the orchestrator's own, when it has examples, is last.
    agents: Vec<String>,
    /// Which agents make something for the user from a Task Note (an email,
    /// a calendar block): what [`Router::acts_on`] lets act on another's result.
    makes: Vec<bool>,
    me: Option<usize>,
    vocabulary: FxHashMap<Feature, u32>,
    idf: Vec<f32>,
    docs: Vec<Doc>,
    model: Softmax,
    /// The content words the texts use, and how often.
    known: FxHashMap<String, u32>,
    /// Those used at least [`COMMON`] times, as letters, with their count:
    /// what a misspelled word is corrected to.
    common: Vec<(Vec<char>, u32)>,
    /// Per first word of a text (its [`Kind::First`] feature): how many agents have a text that starts with it.
    starts: FxHashMap<Feature, u32>,
    /// Per content word (its [`Kind::Word`] feature): how many agents have a text that uses it.
    spread: FxHashMap<Feature, u32>,
}

/// The edit distance of two words, a swap of neighbouring letters counting
/// one (`emial` → `email`), or `None` when it is over `max`.
fn distance(a: &[char], b: &[char], max: usize) -> Option<usize> {
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for i in 0..=a.len() {
        d[i * w] = i;
    }
    for (j, x) in d.iter_mut().enumerate().take(w) {
        *x = j;
    }
    for i in 1..=a.len() {
        let mut row_min = usize::MAX;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * w + j] + 1).min(d[i * w + j - 1] + 1).min(d[(i - 1) * w + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * w + j - 2] + 1);
            }
            d[i * w + j] = v;
            row_min = row_min.min(v);
        }
        if row_min > max {
            return None;
        }
    }
    let v = d[a.len() * w + b.len()];
    (v <= max).then_some(v)
}

/// An agent's score for a text, with the example that came closest.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Match {
    /// The agent's slug.
    pub agent: String,
    /// Its score: how sure the router is that the text is this agent's, 0 to 1.
    pub score: f64,
    /// The configured example (or description) of the agent closest to the
    /// clause; filled in for what [`Router::route`] returns only (empty in
    /// [`Router::scores`]).
    pub example: String,
    /// The part of the request that was scored.
    pub clause: String,
    /// What the model read of it (shared by the matches of one text), kept
    /// so that [`Router::route`] explains a match without reading it again.
    query: Arc<Vector>,
}

/// Who a request is for.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Routed {
    /// The specialists picked, in the order the request names them.
    pub picks: Vec<Match>,
    /// The best match of the whole request, the orchestrator included.
    pub best: Option<Match>,
}

impl Routed {
    /// Whether some pick scored [`STRONG`] or more.
    pub(crate) fn strong(&self) -> bool {
        self.picks.iter().any(|m| m.score >= STRONG)
    }

    #[cfg(test)]
    /// Whether the whole request is most like what the orchestrator answers itself.
    pub(crate) fn answers_itself(&self, me: &str) -> bool {
        self.picks.is_empty() && self.best.as_ref().is_some_and(|b| b.agent == me && b.score >= THRESHOLD)
    }
}

fn unit(v: &mut Vector) {
    let norm = v.iter().map(|(_, x)| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|(_, x)| *x /= norm);
    }
}

fn dot(a: &Vector, b: &Vector) -> f32 {
    let (mut i, mut j, mut sum) = (0, 0, 0.0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                sum += a[i].1 * b[j].1;
                i += 1;
                j += 1;
            }
        }
    }
    sum
}

/// Per feature of `kind`: how many agents have a text with it.
fn agents_per(raw: &[(usize, String, Features)], kind_of: Kind) -> FxHashMap<Feature, u32> {
    let mut agents: FxHashMap<Feature, Vec<usize>> = FxHashMap::default();
    for (agent, _, f) in raw {
        for k in f.keys().filter(|k| kind(**k) == kind_of as u8) {
            let with = agents.entry(*k).or_default();
            if !with.contains(agent) {
                with.push(*agent);
            }
        }
    }
    agents.into_iter().map(|(k, a)| (k, u32::try_from(a.len()).unwrap_or(u32::MAX))).collect()
}

/// What an agent's configuration says it does, one text each.
fn texts(spec: &AgentSpec, me: bool) -> Vec<String> {
    let mut out: Vec<String> = spec.examples.iter().map(|e| without_names(e)).collect();
    if !me {
        out.push(without_names(&spec.description));
        out.push(spec.keywords.join(" "));
        out.push(spec.capabilities.iter().map(|c| c.replace('_', " ")).collect::<Vec<_>>().join(" "));
    }
    out.retain(|t| !t.trim().is_empty());
    out
}

impl Router {
    /// Learns from the `specialists`' configuration and the examples of `me`,
    /// the orchestrator (what it answers itself).
    pub(crate) fn new<'a>(specialists: impl IntoIterator<Item = &'a AgentSpec>, me: Option<&AgentSpec>) -> Self {
        let mut agents = Vec::new();
        let mut makes = Vec::new();
        let mut raw: Vec<(usize, String, Features)> = Vec::new();
        let specs = specialists.into_iter().map(|s| (s, false)).chain(me.map(|s| (s, true)));
        for (spec, is_me) in specs {
            let texts = texts(spec, is_me);
            if texts.is_empty() {
                continue;
            }
            agents.push(spec.slug.to_string());
            makes.push(spec.task_notes && !is_me);
            raw.extend(texts.into_iter().map(|t| (agents.len() - 1, t.clone(), features(&t))));
        }
        let me = me.and_then(|m| agents.iter().position(|a| a == m.slug.as_str()));
        let mut vocabulary: FxHashMap<Feature, u32> = FxHashMap::default();
        let mut df: Vec<f32> = Vec::new();
        for (_, _, f) in &raw {
            for k in f.keys() {
                let next = u32::try_from(vocabulary.len()).unwrap_or(u32::MAX);
                let id = *vocabulary.entry(*k).or_insert(next) as usize;
                if id == df.len() {
                    df.push(0.0);
                }
                df[id] += 1.0;
            }
        }
        let n = raw.len() as f32;
        let idf = df.iter().map(|d| ((n + 1.0) / (d + 1.0)).ln() + 1.0).collect();
        let mut known: FxHashMap<String, u32> = FxHashMap::default();
        for (_, t, _) in &raw {
            for w in content(t) {
                *known.entry(w).or_default() += 1;
            }
        }
        let mut common: Vec<(Vec<char>, u32)> =
            known.iter().filter(|(_, n)| **n >= COMMON).map(|(w, n)| (w.chars().collect(), *n)).collect();
        common.sort_unstable();
        // a text's first word is its `First` feature, each content word its `Word` one (`features_of`)
        let starts = agents_per(&raw, Kind::First);
        let spread = agents_per(&raw, Kind::Word);
        let model = Softmax::train(0, 0, &[]);
        let mut router =
            Self { agents, makes, me, vocabulary, idf, docs: Vec::new(), model, known, common, starts, spread };
        router.docs = raw
            .into_iter()
            .map(|(agent, text, f)| {
                #[allow(unused_mut)]
                let mut vector = router.vector(&f);
                #[cfg(test)]
                router.embedded(&text, &mut vector);
                Doc { agent, text, vector }
            })
            .collect();
        let examples: Vec<(usize, &[(u32, f32)])> =
            router.docs.iter().map(|d| (d.agent, d.vector.as_slice())).collect();
        #[cfg(test)]
        let features =
            router.vocabulary.len() + usize::from(super::embedding_trial::on()) * super::embedding_trial::DIMENSIONS;
        #[cfg(not(test))]
        let features = router.vocabulary.len();
        let model = Softmax::train(features, router.agents.len(), &examples);
        router.model = model;
        router
    }

    /// The embedding trial's features of `text` appended to `v` (ids after
    /// the vocabulary's), when the trial is on (`super::embedding_trial`).
    #[cfg(test)]
    fn embedded(&self, text: &str, v: &mut Vector) {
        if let Some(e) = super::embedding_trial::embed(&without_names(text)) {
            let base = self.vocabulary.len();
            v.extend(e.into_iter().enumerate().filter_map(|(i, x)| Some((u32::try_from(base + i).ok()?, x))));
        }
    }

    fn vector(&self, f: &Features) -> Vector {
        let mut v: Vector = f
            .iter()
            .filter_map(|(k, &x)| {
                let id = *self.vocabulary.get(k)?;
                let tf = if x >= 1.0 { 1.0 + x.ln() } else { x };
                Some((id, tf * self.idf[id as usize]))
            })
            .collect();
        v.sort_unstable_by_key(|(id, _)| *id);
        unit(&mut v);
        v
    }

    /// The router for these agents, learned once per process for the same
    /// texts: every runtime built from one configuration (a test suite builds
    /// hundreds) shares the weights instead of learning them again. The
    /// weights are a pure function of the configuration's texts, so sharing
    /// them shares nothing of any user's.
    pub(crate) fn shared<'a>(
        specialists: impl IntoIterator<Item = &'a AgentSpec>,
        me: Option<&AgentSpec>,
    ) -> Arc<Self> {
        /// Routers kept, most recently learned last.
        const KEPT: usize = 8;
        static LEARNED: LazyLock<Mutex<Learned>> = LazyLock::new(Mutex::default);
        let specialists: Vec<&AgentSpec> = specialists.into_iter().collect();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for (spec, is_me) in specialists.iter().map(|s| (*s, false)).chain(me.map(|s| (s, true))) {
            (spec.slug.as_str(), texts(spec, is_me), is_me).hash(&mut h);
        }
        let key = h.finish();
        if let Some((_, r)) = crate::util::lock(&LEARNED).iter().find(|(k, _)| *k == key) {
            return r.clone();
        }
        let router = Arc::new(Self::new(specialists, me));
        let mut kept = crate::util::lock(&LEARNED);
        kept.retain(|(k, _)| *k != key);
        if kept.len() >= KEPT {
            kept.remove(0);
        }
        kept.push((key, router.clone()));
        router
    }

    /// Every agent's score for `text`, best first (ties: the agent declared
    /// first); none when no word of it is known. No example is looked for
    /// here: [`Router::route`] explains only the matches it returns.
    fn scores(&self, text: &str) -> Vec<Match> {
        let Some(q) = self.query(text) else { return Vec::new() };
        let Some(p) = self.model.probabilities(&q) else { return Vec::new() };
        let q = Arc::new(q);
        let mut out: Vec<Match> = self
            .agents
            .iter()
            .zip(&p)
            .map(|(agent, p)| Match {
                agent: agent.clone(),
                score: f64::from((p * 1000.0).round() / 1000.0),
                example: String::new(),
                clause: text.trim().to_string(),
                query: q.clone(),
            })
            .collect();
        out.sort_by(|a, b| b.score.total_cmp(&a.score));
        out
    }

    /// The vector the model reads for `text`; none when no word of it is known.
    fn query(&self, text: &str) -> Option<Vector> {
        // a name (a merchant, a person) says nothing of who should do the work, in a request as in an example
        let plain = without_names(text);
        let words = self.spelled(content(&plain));
        let mut f = features_of(&words);
        shapes(&plain, &mut f);
        // letters alone (a word's pieces) know no word: gibberish, or a language none of the texts is in
        if !f.keys().any(|k| kind(*k) != Kind::Gram as u8 && self.vocabulary.contains_key(k)) {
            return None;
        }
        #[allow(unused_mut)]
        let mut q = self.vector(&f);
        #[cfg(test)]
        self.embedded(text, &mut q);
        Some(q)
    }

    /// Why each match of `routed` (the picks and the whole text's best): the
    /// example of its agent closest to what it was scored on. A pass over
    /// the agent's texts, so it runs for what is shown only, not for every
    /// clause and piece scored on the way. The whole text's best is most
    /// often a pick too (a one-clause request): looked for once.
    fn explain(&self, routed: &mut Routed) {
        let mut found: Vec<(String, Arc<Vector>, String)> = Vec::new();
        for m in routed.best.iter_mut().chain(routed.picks.iter_mut()) {
            if let Some((_, _, example)) = found.iter().find(|(a, q, _)| *a == m.agent && Arc::ptr_eq(q, &m.query)) {
                m.example = example.clone();
                continue;
            }
            let Some(a) = self.agents.iter().position(|a| *a == m.agent) else { continue };
            // each text's product once (comparing two by theirs computed most of them twice)
            let docs = self.docs.iter().filter(|d| d.agent == a).map(|d| (dot(&m.query, &d.vector), d));
            let closest = docs.max_by(|x, y| x.0.total_cmp(&y.0));
            m.example = closest.map(|(_, d)| d.text.trim().to_string()).unwrap_or_default();
            found.push((m.agent.clone(), m.query.clone(), m.example.clone()));
        }
    }

    /// Words no text used, corrected to the most used known word one edit
    /// away (two for a word of nine letters or more): `emial` → `email`,
    /// `spnd` → `spend`, `deductable` → `deductible`. Only what people's
    /// slips look like: the first letter kept, no letter added to a short
    /// word (`play` is not `pay`), no letter changed in a word of under six
    /// (`same` is not `save`), and the word corrected to used at least
    /// [`COMMON`] times.
    fn spelled(&self, words: Vec<String>) -> Vec<String> {
        words.into_iter().map(|w| self.correct(&w).unwrap_or(w)).collect()
    }

    fn correct(&self, w: &str) -> Option<String> {
        let chars: Vec<char> = w.chars().collect();
        if chars.len() < 4
            || !chars.iter().all(char::is_ascii_lowercase)
            || self.known.contains_key(w)
            || self.vocabulary.contains_key(&feature(Kind::Word, &[&base(w)]))
        {
            return None;
        }
        let max = if chars.len() >= 9 { 2 } else { 1 };
        let mut best: Option<(usize, u32, &[char])> = None;
        for (kc, n) in &self.common {
            let n = *n;
            if kc.len() < 3 || kc[0] != chars[0] || (chars.len() > kc.len() && chars.len() < 7) {
                continue;
            }
            let Some(d) = distance(&chars, kc, max) else { continue };
            let swapped = || {
                let (mut x, mut y) = (chars.clone(), kc.clone());
                x.sort_unstable();
                y.sort_unstable();
                x == y
            };
            if kc.len() == chars.len() && chars.len() < 6 && !swapped() {
                continue;
            }
            // the closest, then the most used; `common` is sorted, so the first of equals stays
            if best.is_none_or(|(bd, bn, _)| d < bd || (d == bd && n > bn)) {
                best = Some((d, n, kc));
            }
        }
        best.map(|(_, _, k)| k.iter().collect())
    }

    /// Whether every content word of `clause` is one the texts of many
    /// agents use ([`SPREAD`]): it names what to look at, and asks nothing.
    fn names_only_material(&self, clause: &str) -> bool {
        let words = content(&without_names(clause));
        !words.is_empty()
            && words.iter().all(|w| self.spread.get(&feature(Kind::Word, &[&base(w)])).is_some_and(|n| *n >= SPREAD))
    }

    fn pick(&self, text: &str) -> Option<Match> {
        self.picked(self.scores(text).into_iter().next()?)
    }

    /// `top`, a text's best match, when it is picked: a specialist (not the
    /// orchestrator itself) at least [`THRESHOLD`] sure.
    fn picked(&self, top: Match) -> Option<Match> {
        let mine = self.me.is_some_and(|m| self.agents[m] == top.agent);
        (!mine && top.score >= THRESHOLD).then_some(top)
    }

    /// Who `text` is for: the best specialist of each clause, once each, in
    /// the order the clauses name them (both pieces' agents when a clause's
    /// pieces each clearly ask someone else); the whole text's best when no
    /// clause picks anyone. What comes before a colon is the request, what
    /// follows it the material (`make this sound professional: hey guys,
    /// the meeting moved` is not about a meeting), unless the request alone
    /// picks nobody, says too little to go on (`add this: Chipotle
    /// 10/25/2025 12.80` is read whole) or tells of the user instead of
    /// asking (`I have three cards: Visa $4,200 at 24.9% … Give me an
    /// avalanche plan` is read whole). A clause after the material that
    /// tells (`… I can pay $500 a month`) adds no agent either. Each match
    /// returned names its agent's example closest to its clause.
    pub(crate) fn route(&self, text: &str) -> Routed {
        let mut routed = self.routed(text);
        self.explain(&mut routed);
        routed
    }

    fn routed(&self, text: &str) -> Routed {
        let colon = [": ", ":\n"].iter().filter_map(|c| text.find(c)).min();
        // a short request before a pasted record (`save this purchase: Apple Store 10/23/2025 179.00`)
        // is about the record: read whole
        let record = |m: &str| {
            let mut f = Features::default();
            shapes(m, &mut f);
            f.contains_key(&feature(Kind::Shape, &["date"])) && f.contains_key(&feature(Kind::Shape, &["money"]))
        };
        let asked = colon.map_or(0, |at| content(&text[..at]).len());
        if let Some(at) = colon
            && asked >= 2
            && !(asked <= 3 && record(&text[at..]))
            && !tells(&text[..at])
        {
            let mut routed = self.route_all(&text[..at]);
            if !routed.picks.is_empty() {
                // a request that goes on after its material (`…: 3 done, 1 blocked, and put a
                // review on my calendar`) adds whoever its later clauses clearly name; the
                // clause right after the colon is the material itself
                let sep = table(text);
                let purchases = purchase_list(text);
                let later = clauses(&text[at + 1..])
                    .into_iter()
                    .skip(1)
                    .filter(|c| !(tells(c) || sep.is_some_and(|s| row(c, s)) || purchases && purchase_line(c)));
                for m in later.filter_map(|c| self.pick(&c)).filter(|m| m.score >= STRONG) {
                    if !routed.picks.iter().any(|p| p.agent == m.agent) {
                        routed.picks.push(m);
                    }
                }
                return routed;
            }
        }
        self.route_all(text)
    }

    /// A clause whose first word asks an agent that makes something (an
    /// email, a calendar block) to make it from what the rest of the clause
    /// asks another agent for (`email my sister the summary of my october
    /// spending`): both, the other agent first, each at least [`PIECE`] sure
    /// of its part. The maker's part is the whole clause, since it works on
    /// the other's result. What the rest says with *to*, *that* or *about*
    /// is what to write (`email my client that the invoice is attached`),
    /// not someone else's work.
    fn acts_on(&self, clause: &str, found: &[Match]) -> Option<Vec<Match>> {
        const SAYS: [&str; 6] = ["to", "that", "about", "saying", "asking", "telling"];
        let words = content(clause);
        let [first, .., _, _] = words.as_slice() else { return None };
        let lower = clause.to_lowercase();
        let rest = clause.get(lower.find(first.as_str())? + first.len()..)?;
        if super::text::words(rest).iter().any(|w| SAYS.contains(&w.as_str())) {
            return None;
        }
        // a first word that starts the texts of many agents ("make me a snowball plan", "make this
        // sound professional", "make a progress report") is no maker's own verb: what it makes is
        // said by the rest
        if self.starts.get(&feature(Kind::First, &[&base(first)])).is_some_and(|n| *n > HEAD_SPREAD) {
            return None;
        }
        let makes = |m: &Match| self.agents.iter().position(|a| *a == m.agent).is_some_and(|i| self.makes[i]);
        let head = self.pick(first).filter(|m| m.score >= PIECE && makes(m))?;
        let rest = self.pick(rest).filter(|m| m.score >= PIECE && m.agent != head.agent && !makes(m))?;
        if !found.iter().any(|m| m.agent == head.agent || m.agent == rest.agent) {
            return None;
        }
        Some(vec![rest, Match { clause: clause.trim().to_string(), ..head }])
    }

    fn route_all(&self, text: &str) -> Routed {
        let mut picks: Vec<Match> = Vec::new();
        let best = self.scores(text).into_iter().next();
        // a clause that is the whole text (most requests) is not scored twice
        let pick = |clause: &str| {
            if clause.trim() == text.trim() { best.clone().and_then(|m| self.picked(m)) } else { self.pick(clause) }
        };
        // a pasted table's rows, and a pasted list of purchases (two lines or more), are
        // material: they ask no one when another clause asks someone
        let sep = table(text);
        let purchases = purchase_list(text);
        let is_row = |p: &Vec<String>| sep.is_some_and(|s| row(&p.join(" "), s));
        let mut pieces = clause_pieces(text);
        if purchases && !pieces.iter().flatten().all(|p| purchase_line(p)) {
            pieces.iter_mut().for_each(|c| c.retain(|p| !purchase_line(p)));
            pieces.retain(|c| !c.is_empty());
        }
        if !pieces.iter().all(is_row) {
            pieces.retain(|p| !is_row(p));
        }
        // each clause's agents, and whether it tells of the user rather than asks
        let clauses: Vec<(Vec<Match>, bool, String)> = pieces
            .into_iter()
            .map(|pieces| {
                let clause = pieces.join(" ");
                let mut found: Vec<Match> = Vec::new();
                if pieces.len() > 1 {
                    // pieces that each clearly ask someone else (`what's my largest expense` and `is it deductible`)
                    let own: Vec<Match> =
                        pieces.iter().filter_map(|p| self.pick(p)).filter(|m| m.score >= PIECE).collect();
                    if own.iter().any(|m| m.agent != own[0].agent) {
                        found = own;
                    }
                }
                if found.is_empty() {
                    found.extend(pick(&clause));
                    if let Some(two) = self.acts_on(&clause, &found) {
                        found = two;
                    }
                }
                let told = tells(&clause);
                (found, told, clause)
            })
            .collect();
        // what the user tells ("I run a small bakery …", "I can do $800 a month") is the material
        // of what they ask, wherever it stands: it adds no agent when another clause asks one
        // that the router is sure of
        let asks = clauses.iter().any(|(found, tells, _)| !tells && found.iter().any(|m| m.score >= STRONG));
        // told and asked, and no clause that asks is sure of its agent ("I have a loan at 9% and a
        // card at 25%. Which one first?"): the request is the whole text, told and asked together
        let unsure = !asks
            && clauses.iter().any(|(found, tells, _)| !tells && !found.is_empty())
            && clauses.iter().any(|(found, tells, _)| *tells && !found.is_empty());
        if unsure && let Some(m) = best.clone().and_then(|m| self.picked(m)) {
            return Routed { picks: vec![m], best };
        }
        for (found, tells, _) in &clauses {
            if *tells && asks {
                continue;
            }
            for m in found {
                // a later clause adds an agent only when it is sure of it: a figure or a period
                // in the rest of a request ("… and how much interest will that cost me?") is
                // most often more of the same request, not a second one
                let second = !picks.is_empty() && m.score < SECOND;
                if !second && !picks.iter().any(|p| p.agent == m.agent) {
                    picks.push(m.clone());
                }
            }
        }
        // a first clause unsure of its agent before a later one sure of another ("go through my
        // transactions and sort them into categories") is that request's scope, not a request
        if picks.len() >= 2 && picks[0].score < LEAD && picks[1..].iter().any(|m| m.score >= SECOND) {
            picks.remove(0);
        }
        // a first clause that names only what to look at ("go through my October expenses": words
        // the texts of many agents use), before a later one that asks for something of each of
        // its items ("and flag the ones I can deduct"), is that request's scope; a maker's work
        // on them ("and email them to my accountant") is a request of its own
        if let [(first, false, scope), (later, false, asks)] = clauses.as_slice()
            && let ([a], [b]) = (first.as_slice(), later.as_slice())
            && picks.len() == 2
            && picks[0].agent == a.agent
            && picks[1].agent == b.agent
            && !self.agents.iter().position(|x| *x == b.agent).is_some_and(|i| self.makes[i])
            && refers_to_items(asks)
            && self.names_only_material(scope)
        {
            picks.remove(0);
        }
        // no clause picked anyone: the whole text's best
        if picks.is_empty()
            && let Some(m) = best.clone().and_then(|m| self.picked(m))
        {
            picks.push(m);
        }
        Routed { picks, best }
    }
}

/// Whether `clause` asks about each of some items named before it ("flag
/// the ones …", "tag each one", "which ones can I write off", "point out
/// anything …", "categorize them").
fn refers_to_items(clause: &str) -> bool {
    clause
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| ["them", "each", "ones", "anything", "any"].iter().any(|r| w.eq_ignore_ascii_case(r)))
}

/// Whether `clause` tells something of the user instead of asking for
/// something: its subject is the user ("I", "we", "my …", "our …"), its
/// verb is no wish ("I need", "we want", "I'd like" ask), and it asks no
/// question. After a request such a clause is that request's material
/// ("Lay out a snowball plan: Visa $950 at 21%. I can do $800 a month").
/// A clause that presents what came with the request ("Here's my statement
/// export", "This is my bank export", "Attached are last week's receipts")
/// tells too: beside a clause that asks, the document is that request's
/// material, not a request to read it.
fn tells(clause: &str) -> bool {
    if clause.contains('?') {
        return false;
    }
    let lower = clause.to_lowercase();
    let mut words = lower.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’')).filter(|w| !w.is_empty());
    let skip = ["and", "also", "then", "plus", "but", "so", "oh", "ok", "okay"];
    let Some(first) = words.by_ref().find(|w| !skip.contains(w)) else { return false };
    if presents(first, words.clone()) {
        return true;
    }
    let subject = ["i", "i'm", "i’m", "i've", "i’ve", "we", "we're", "we’re", "we've", "we’ve", "my", "our"];
    if !subject.contains(&first) {
        return false;
    }
    let wish = ["need", "want", "wanna", "would", "like", "wish", "'d", "please", "also"];
    !words.take(2).any(|w| wish.contains(&w))
}

/// Whether a clause whose first word is `first` (then `rest`) presents a
/// document: "here's …", "here is/are …", "this is my/the/a …",
/// "attached …", "I've attached …".
fn presents<'a>(first: &str, mut rest: impl Iterator<Item = &'a str>) -> bool {
    let (second, third) = (rest.next(), rest.next());
    match first {
        "here's" | "here’s" | "attached" => true,
        "here" => matches!(second, Some("is" | "are")),
        "this" => second == Some("is") && matches!(third, Some("my" | "the" | "a" | "an" | "our")),
        "i've" | "i’ve" | "i" => matches!(second, Some("attached")),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn router() -> Router {
        let c = Config::builtin();
        let me = c.agent("prime-boss");
        Router::new(c.agents.iter().filter(|a| a.slug.as_str() != "prime-boss"), me)
    }

    fn picked(text: &str) -> Vec<String> {
        router().route(text).picks.into_iter().map(|m| m.agent).collect()
    }

    /// Each "make" text reached Format beside Blitz before its rule: "make" starts texts of many
    /// agents, so it is no maker's own verb; "email" still is.
    #[test]
    fn a_first_word_many_agents_start_with_makes_nothing_itself() {
        for text in [
            "make me a payoff plan for my car loan and two store cards, avalanche style",
            "make a snowball schedule for my three loans",
            "Make me a debt plan: Visa $2,000 at 21%, student loan $9,000 at 5%, $400 a month.",
        ] {
            assert_eq!(picked(text), ["blitz-debt"], "{text}");
        }
        assert_eq!(picked("email my accountant a list of my deductions"), ["ledger-tax", "email"]);
        assert_eq!(picked("email my sister the summary of my october spending"), ["crystal-analytics", "email"]);
    }

    /// Each text failed before its rule: a row's merchant and figures read as a receipt's, or its
    /// amount as a savings goal's.
    #[test]
    fn a_pasted_tables_rows_are_material_not_requests() {
        let asked = [
            "Could you check this for repeated lines and hand it back as JSON?\norder_id,customer,total,contact\n\
             1001,Ines Duarte,42.50,ines@duarte.pt\n1002,Leo Marsh,18.00,leo@marsh\n1001,Ines Duarte,42.50,ines@duarte.pt",
            "turn into json pls\nid;date;merchant;amount\n7;2025-04-02;Aldi;31,20\n8;2025-04-03;Shell;55,00",
        ];
        for text in asked {
            assert_eq!(picked(text), ["data"], "{text}");
        }
        // a sentence's commas make no table, and one line of a list is no table
        assert_eq!(picked("Break down my spending on food, rent, and fun this month."), ["crystal-analytics"]);
        assert_eq!(super::super::text::table("apples, pears, plums\nthen rank them"), None);
        assert_eq!(super::super::text::table("a,b,c\n1,2,3"), Some(','));
    }

    /// Each list reached Byte beside (or instead of) Tag before its rule: a pasted statement's line
    /// alone reads as a purchase to keep. A list of two lines or more is the material of the
    /// request around it; one purchase with its request ("add this: …") is still read.
    #[test]
    fn a_pasted_list_of_purchases_is_material_not_requests() {
        for text in [
            "put each of these in a category please\n10/01 WHOLE FOODS 54.20\n10/02 UBER TRIP 23.10\n10/03 SPOTIFY 10.99",
            "Hey, these came off my credit card, sort them into categories?\n10/14 TARGET 41.07\n10/15 SHELL 38.90",
        ] {
            assert_eq!(picked(text), ["tag-ai"], "{text}");
        }
        assert!(super::super::text::purchase_line("09/03 SHELL OIL 57.80"));
        assert!(super::super::text::purchase_line("2024-05-02 Trader Joe's 87.13"));
        assert!(!super::super::text::purchase_line("Shell 11/01/2025 $48.20 - put this in"));
        assert!(!super::super::text::purchase_line("TARGET STORE"));
    }

    #[test]
    fn requests_reach_the_agent_whose_examples_they_resemble() {
        assert_eq!(picked("how much did I spend on takeout last month?"), ["crystal-analytics"]);
        assert_eq!(picked("catagorize my purchases"), ["tag-ai"]);
        assert_eq!(picked("whats the quickest way to clear my credit card"), ["blitz-debt"]);
    }

    #[test]
    fn a_clause_that_tells_of_the_user_is_told_from_one_that_asks() {
        for told in ["I can put $900 a month toward them.", "and we have $3,000 saved", "My rent is 1,450."] {
            assert!(tells(told), "{told}");
        }
        for asked in [
            "I need a reminder on April 1",
            "I'd like an email to my landlord",
            "we also want the total",
            "can I afford it?",
            "remind me on Friday",
            "my card: which one first?",
        ] {
            assert!(!tells(asked), "{asked}");
        }
        // after a request, what the user tells is its material: no second agent
        let debts = "Build me an avalanche payoff plan for my debts. I can put $900 a month toward them.";
        assert_eq!(picked(debts), ["blitz-debt"]);
        // and before it, when what is asked is sure of its agent
        let bakery = "I run a small bakery and everything goes through one card, ugh. \
                      Just tell me which categories took the most money in October.";
        assert_eq!(picked(bakery), ["crystal-analytics"]);
    }

    #[test]
    fn a_clause_that_presents_a_document_is_the_material_of_the_one_that_asks() {
        for presents in [
            "Here's my statement export",
            "here is last month's export",
            "This is my bank statement export",
            "Attached are the receipts from my trip",
            "I've attached my checking account export",
        ] {
            assert!(tells(presents), "{presents}");
        }
        for not in ["This is going to our finance director", "here's how much I owe?", "Attach the receipt"] {
            assert!(!tells(not), "{not}");
        }
        // beside a request sure of its agent, the document is what it works on, not Byte's to read
        let statement = "Here's my statement export. Sort each line into a category for me.";
        assert_eq!(picked(statement), ["tag-ai"]);
        // alone, presenting a document is still a request to read it
        assert_eq!(picked("here's my statement from the bank"), ["byte-doc"]);
    }

    #[test]
    fn what_the_user_tells_around_a_colon_is_material_not_a_request() {
        // before the colon what the user has, after it what they can pay: the plan's material
        // (each reached Crystal too before: "I have two credit cards" and "I can pay $450 a month")
        let cards = "I have two credit cards: Visa $3,100 at 23%, Discover $1,400 at 18%. \
                     I can pay $450 a month total. Give me an avalanche plan.";
        assert_eq!(picked(cards), ["blitz-debt"]);
    }

    #[test]
    fn told_and_asked_with_no_sure_question_is_read_as_one_request() {
        // the question alone is not sure of its agent, and what is told reaches another
        // (Tag, Crystal): the whole message says who
        let iceland = "So my dream is a trip to Iceland in 2027. I've been saving, about $1,900 so far toward \
                       $6,000. I can only spare around $200 a month. Think I'll make it by next spring?";
        assert_eq!(picked(iceland), ["goalie-goals"]);
        let cards = "I have debt on two card, one 1800 with 22% and other 700 with 29%. I can pay 300 every month. \
                     Which one first and how many months?";
        assert_eq!(picked(cards), ["blitz-debt"]);
    }

    #[test]
    fn email_addresses_in_a_list_are_datas_not_a_message_to_write() {
        // "emails" in a list to check are addresses: each of these reached Email too, or only
        let choir = "Here's our choir's contact list as a CSV. Make it JSON and tell me which emails look broken.";
        assert_eq!(picked(choir), ["data"]);
        let gym = "I exported the gym members sheet to CSV; some people signed up twice and a few emails are junk. \
                   Clean it into JSON?";
        assert_eq!(picked(gym), ["data"]);
        assert_eq!(picked("which of these emails would bounce: ana@mail.com, bo@@x.org, kim@site"), ["data"]);
        // one email is still a message
        assert_eq!(picked("draft an email to my landlord about the broken heater"), ["email"]);
    }

    #[test]
    fn a_first_clause_unsure_of_its_agent_is_the_scope_of_a_sure_one() {
        // "comb through what I bought" and "run through my statement" reached Crystal and Byte too
        let comb = "comb through what I bought in September and flag anything I could write off";
        assert_eq!(picked(comb), ["ledger-tax"]);
        let run = "Run through my statement and pick out the business expenses for my taxes.";
        assert_eq!(picked(run), ["ledger-tax"]);
        // two requests each sure of its agent are still two
        let two = "what's my biggest category and how's my vacation fund doing";
        assert_eq!(picked(two), ["crystal-analytics", "goalie-goals"]);
    }

    #[test]
    fn a_misspelled_word_is_read_as_the_known_word_people_slip_from() {
        let r = router();
        assert_eq!(r.correct("emial").as_deref(), Some("email"));
        assert_eq!(r.correct("spnd").as_deref(), Some("spend"));
        assert_eq!(r.correct("deductable").as_deref(), Some("deductible"));
        // a known word, an unknown word that is no slip of a known one, a letter changed in a short word
        for w in ["email", "haiku", "play", "gold"] {
            assert_eq!(r.correct(w), None, "{w}");
        }
        assert_eq!(distance(&['e', 'm', 'i', 'a', 'l'], &['e', 'm', 'a', 'i', 'l'], 1), Some(1));
        assert_eq!(distance(&['a', 'b', 'c', 'd'], &['w', 'x', 'y', 'z'], 2), None);
    }

    #[test]
    fn pieces_of_one_clause_that_each_clearly_ask_someone_reach_both() {
        assert_eq!(picked("what's my largest expense and is it deductible"), ["crystal-analytics", "ledger-tax"]);
        assert_eq!(picked("how much did i spend on software and can i deduct it"), ["crystal-analytics", "ledger-tax"]);
        assert_eq!(picked("how much did I spend on uber and lyft last month?"), ["crystal-analytics"]);
    }

    #[test]
    fn what_follows_a_colon_is_material_not_the_request() {
        assert_eq!(picked("make this sound professional: hey, the meeting moved to friday"), ["format"]);
        // a request of one word is read with its material
        assert_eq!(picked("add this: Chipotle 10/25/2025 12.80"), ["byte-doc"]);
    }

    #[test]
    fn a_request_for_two_things_reaches_two_agents_in_its_order() {
        assert_eq!(
            picked("Analyze my spending and check how my house savings goal is going"),
            ["crystal-analytics", "goalie-goals"]
        );
    }

    #[test]
    fn what_the_orchestrator_answers_itself_and_unknown_requests_pick_nobody() {
        let r = router();
        let away = r.route("find me flights to Denver");
        assert!(away.picks.is_empty() && away.answers_itself("prime-boss"), "{away:?}");
        assert!(r.route("zxqv blorp").picks.is_empty());
        assert!(r.route("").picks.is_empty());
    }

    #[test]
    fn an_agent_with_only_a_description_is_routed_too() {
        let toml = r#"
[[agents]]
slug = "vet"
name = "Vet"
description = "Answers questions about pets: dogs, cats, vaccinations and pet food."
"#;
        let c = Config::from_toml(toml).unwrap();
        let r = Router::new(c.agents.iter(), None);
        assert_eq!(r.route("is this food ok for my cat?").picks[0].agent, "vet");
    }

    /// Each reached Crystal beside the agent its second clause asks before the rule: "go
    /// through my purchases" names what to look at, and the rest asks for something of each
    /// item. A maker's work on them, or a first clause that asks something itself, keeps both.
    #[test]
    fn a_first_clause_that_only_names_what_to_look_at_is_the_scope_of_the_next() {
        assert_eq!(picked("Go through my September purchases and mark the ones I can deduct."), ["ledger-tax"]);
        assert_eq!(picked("Please go through this month's charges and give each one a category."), ["tag-ai"]);
        assert_eq!(picked("find my deductions and email them to my accountant"), ["ledger-tax", "email"]);
        assert_eq!(picked("categorize my transactions and block an hour to go over them"), ["tag-ai", "calendar"]);
        assert_eq!(
            picked("what are my biggest expenses and which of them are deductible"),
            ["crystal-analytics", "ledger-tax"]
        );
    }

    /// What a route shows for each match (the picks and the whole text's
    /// best) is one of its own agent's configured texts, the one closest to
    /// the clause it was picked for; scores computed on the way carry none.
    #[test]
    fn each_match_a_route_returns_names_its_own_agents_closest_example() {
        let c = Config::builtin();
        let r = router();
        let own = |agent: &str, example: &str| {
            texts(c.agent(agent).unwrap(), agent == "prime-boss").iter().any(|t| t.trim() == example)
        };
        let routed = r.route("tag my October purchases, then email the totals to my accountant Dana");
        assert_eq!(routed.picks.iter().map(|m| m.agent.as_str()).collect::<Vec<_>>(), ["tag-ai", "email"]);
        for m in routed.picks.iter().chain(&routed.best) {
            assert!(!m.example.is_empty() && own(&m.agent, &m.example), "{}: {:?}", m.agent, m.example);
        }
        // a text that is itself an example is closest to itself
        let routed = r.route("categorize these purchases");
        assert_eq!(routed.picks[0].example, "categorize these purchases");
        assert!(r.scores("categorize these purchases").iter().all(|m| m.example.is_empty()));
    }
}
