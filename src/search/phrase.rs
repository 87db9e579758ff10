//! A phrase query that skips the documents whose score cannot reach the top hits.
//!
//! tantivy's own phrase query reads the positions of both words in every document that holds
//! them all, to count the phrase; over many documents holding two common words that is most
//! of a search's time. A phrase occurs in a document at most as often as its rarest word, and
//! BM25 grows with the count, so the phrase's own BM25 weight at that word's frequency bounds
//! the document's score. When the top hits collected so far already beat that bound, the
//! document is skipped without reading positions; otherwise tantivy's phrase scorer decides
//! and scores it. The hits and their scores are therefore exactly those of
//! [`PhraseQuery`]: only documents that could not have been collected are skipped.

use std::sync::atomic::{AtomicU32, Ordering};

use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::{BlockSegmentPostings, Postings, SegmentPostings};
use tantivy::query::{
    Bm25StatisticsProvider, Bm25Weight, EnableScoring, Explanation, PhraseQuery, Query, Scorer,
    Weight,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{
    DocId, DocSet, InvertedIndexReader, Score, SeekDangerResult, SegmentReader, TERMINATED, Term,
};

/// How much a block's bound is raised, relative, to cover the rounding of `f32` scores: a block
/// within this margin of the threshold is read document by document rather than skipped.
const BLOCK_BOUND_SLACK: f64 = 1e-3;

#[derive(Clone, Debug)]
pub struct TopPhraseQuery {
    phrase: PhraseQuery,
    field: Field,
    terms: Vec<Term>,
}

impl TopPhraseQuery {
    /// The phrase of `terms` (at least two, all of one field).
    pub fn new(field: Field, terms: Vec<Term>) -> TopPhraseQuery {
        TopPhraseQuery {
            phrase: PhraseQuery::new(terms.clone()),
            field,
            terms,
        }
    }
}

impl Query for TopPhraseQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let bound = match enable_scoring {
            // The same weight tantivy's phrase query scores with (PhraseQuery::phrase_weight).
            EnableScoring::Enabled {
                statistics_provider,
                ..
            } => Some(PhraseBound {
                weight: Bm25Weight::for_terms(statistics_provider, &self.terms)?,
                average_fieldnorm: average_fieldnorm(statistics_provider, self.field)?,
            }),
            EnableScoring::Disabled { .. } => None,
        };
        Ok(Box::new(TopPhraseWeight {
            phrase: self.phrase.weight(enable_scoring)?,
            bound,
            field: self.field,
            terms: self.terms.clone(),
            collected_threshold_bits: AtomicU32::new(0),
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.phrase.query_terms(visitor);
    }
}

struct TopPhraseWeight {
    /// tantivy's phrase weight: every answer and score comes from it.
    phrase: Box<dyn Weight>,
    /// The phrase's BM25 weight, `None` when scoring is disabled.
    bound: Option<PhraseBound>,
    field: Field,
    terms: Vec<Term>,
    /// The highest threshold a segment's collector returned so far in this search, as the
    /// bits of a non-negative `f32` (0.0 when none): some segment holds `limit` hits scoring
    /// at least this much, so a later segment's document scoring strictly less cannot be
    /// among the search's top hits. (Non-negative `f32`s order as their bits do.)
    collected_threshold_bits: AtomicU32,
}

impl Weight for TopPhraseWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        self.phrase.scorer(reader, boost)
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.phrase.explain(reader, doc)
    }

    fn count(&self, reader: &SegmentReader) -> tantivy::Result<u32> {
        self.phrase.count(reader)
    }

    /// Calls `callback` for every document whose score beats `threshold` (raised to what
    /// `callback` returns), as tantivy's default does, but skips a document without reading
    /// its positions when its bound does not beat the threshold, and a whole block of the
    /// rarest word's postings when the block's bound does not.
    fn for_each_pruning(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        let Some(bound) = &self.bound else {
            return self.phrase.for_each_pruning(threshold, reader, callback);
        };
        let inverted_index = reader.inverted_index(self.field)?;
        let mut postings = Vec::with_capacity(self.terms.len());
        for term in &self.terms {
            match inverted_index.read_postings(term, IndexRecordOption::WithFreqs)? {
                Some(found) => postings.push(found),
                None => return Ok(()),
            }
        }
        // The word held by the fewest documents drives the walk: every other word is only
        // sought at its documents.
        let rarest_word = (0..postings.len())
            .min_by_key(|&index| postings[index].doc_freq())
            .unwrap_or(0);
        let mut others = postings;
        others.swap_remove(rarest_word);
        let Some(mut blocks) = inverted_index
            .read_block_postings(&self.terms[rarest_word], IndexRecordOption::WithFreqs)?
        else {
            return Ok(());
        };
        let fieldnorms = reader.get_fieldnorms_reader(self.field)?;
        let block_bound = BlockBound::new(bound, &inverted_index, &fieldnorms, blocks.doc_freq());
        let mut phrase = self.phrase.scorer(reader, 1.0)?;
        // Documents below `unchecked_from` are known not to hold the phrase (the scorer sits
        // on its first match at the start; after a seek it says where to look next).
        let mut unchecked_from = phrase.doc();
        let mut threshold = threshold.max(self.carried_threshold());
        loop {
            let block_len = blocks.block_len();
            if block_len == 0 || unchecked_from == TERMINATED {
                return Ok(());
            }
            if blocks.doc(block_len - 1) < unchecked_from {
                // Lands on the block that may hold `unchecked_from`; when even its last
                // document is below it, no later document of the word is left.
                blocks.seek(unchecked_from);
                let sought_len = blocks.block_len();
                if sought_len == 0 || blocks.doc(sought_len - 1) < unchecked_from {
                    return Ok(());
                }
                continue;
            }
            if block_bound.of_block(&mut blocks, &fieldnorms) <= f64::from(threshold) {
                blocks.advance();
                continue;
            }
            for index in 0..block_len {
                let candidate = blocks.doc(index);
                if candidate < unchecked_from {
                    continue;
                }
                // The rarest word's own frequency bounds the phrase's count too: most
                // documents fail that bound, and the other words are not sought in them.
                let fieldnorm_id = fieldnorms.fieldnorm_id(candidate);
                let driver_freq = blocks.freq(index);
                if bound.weight.score(fieldnorm_id, driver_freq) <= threshold {
                    continue;
                }
                let Some(others_freq) = freq_at(&mut others, candidate) else {
                    continue;
                };
                if bound
                    .weight
                    .score(fieldnorm_id, others_freq.min(driver_freq))
                    > threshold
                {
                    match phrase.seek_danger(candidate) {
                        SeekDangerResult::Found => {
                            let score = phrase.score();
                            if score > threshold {
                                let collected = callback(candidate, score);
                                threshold = threshold.max(collected);
                                if collected > 0.0 {
                                    self.collected_threshold_bits
                                        .fetch_max(collected.to_bits(), Ordering::Relaxed);
                                }
                            }
                            unchecked_from = candidate + 1;
                        }
                        SeekDangerResult::SeekLowerBound(next) => unchecked_from = next,
                    }
                    if unchecked_from == TERMINATED {
                        return Ok(());
                    }
                }
            }
            blocks.advance();
        }
    }
}

impl TopPhraseWeight {
    /// A threshold for a segment from the other segments' collected hits: the largest score
    /// below the highest threshold they returned, so that a document scoring exactly that
    /// much is still collected (which of equal scores wins is then tantivy's choice, as
    /// before), and only those scoring strictly less are skipped.
    fn carried_threshold(&self) -> Score {
        let bits = self.collected_threshold_bits.load(Ordering::Relaxed);
        if bits == 0 {
            Score::MIN
        } else {
            Score::from_bits(bits - 1)
        }
    }
}

/// The lowest frequency of the words of `others` in document `doc`, `None` when one of them
/// is not in it. Each posting list only moves forward, so `doc` must not decrease between
/// calls.
fn freq_at(others: &mut [SegmentPostings], doc: DocId) -> Option<u32> {
    let mut lowest = u32::MAX;
    for posting in others {
        let at = if posting.doc() < doc {
            posting.seek(doc)
        } else {
            posting.doc()
        };
        if at != doc {
            return None;
        }
        lowest = lowest.min(posting.term_freq());
    }
    Some(lowest)
}

/// The average number of tokens of `field` per document over the whole searcher, as
/// [`Bm25Weight::for_terms`] computes it.
fn average_fieldnorm(
    statistics: &dyn Bm25StatisticsProvider,
    field: Field,
) -> tantivy::Result<Score> {
    let total_num_tokens = statistics.total_num_tokens(field)?;
    let total_num_docs = statistics.total_num_docs()?;
    Ok(total_num_tokens as Score / total_num_docs as Score)
}

/// The phrase's BM25 weight and the average fieldnorm it was computed with.
struct PhraseBound {
    weight: Bm25Weight,
    average_fieldnorm: Score,
}

/// A bound on the phrase's score over one block of the rarest word's postings.
///
/// tantivy stores, per full block, the (fieldnorm, term frequency) pair that maximizes BM25's
/// tf factor `tf / (tf + N_s(fieldnorm))` under the *segment's* average fieldnorm `avg_s`,
/// with `N(f) = k1 (1 - b + b f / avg)`. The phrase is scored with the searcher's average
/// `avg_q`, which may differ, so that pair alone does not bound the phrase's scores. But with
/// `rho = avg_s / avg_q`, `N_q(f) = k1 (1 - b) + rho (N_s(f) - k1 (1 - b)) >= min(1, rho)
/// N_s(f)` for every `f`; and from `tf / (tf + N_s) <= F` (the block's best tf factor),
/// `N_s >= tf (1 / F - 1)`. So every document of the block has a tf factor under the phrase's
/// weight of at most `1 / (1 + min(1, rho) (1 / F - 1))`, and the phrase occurs in it at most
/// `tf` times: the phrase's score is at most its weight times that.
struct BlockBound {
    /// tantivy's weight for the rarest word as the segment's writer computed it; only its tf
    /// factor (score over weight) is used.
    segment_weight: Bm25Weight,
    /// The segment weight's score at a tf factor of 1.
    segment_weight_max: f64,
    /// The phrase weight's score at a tf factor of 1.
    phrase_weight_max: f64,
    /// `min(1, rho)`, lowered by the slack.
    norm_ratio: f64,
}

impl BlockBound {
    fn new(
        bound: &PhraseBound,
        inverted_index: &InvertedIndexReader,
        fieldnorms: &FieldNormReader,
        doc_freq: u32,
    ) -> BlockBound {
        // As tantivy's postings serializer computes them (FieldSerializer::create).
        let num_docs = fieldnorms.num_docs();
        let segment_average = inverted_index.total_num_tokens() as Score / num_docs as Score;
        let segment_weight = Bm25Weight::for_one_term_without_explain(
            u64::from(doc_freq.max(1)),
            u64::from(num_docs.max(1)),
            segment_average,
        );
        let rho = f64::from(segment_average) / f64::from(bound.average_fieldnorm);
        let norm_ratio = if rho.is_finite() && rho > 0.0 {
            rho.min(1.0) * (1.0 - BLOCK_BOUND_SLACK)
        } else {
            0.0
        };
        BlockBound {
            // At fieldnorm 0 the tf factor is `tf / (tf + k1 (1 - b))`, which rounds to 1 in
            // `f32` for this tf.
            segment_weight_max: f64::from(segment_weight.score(0, u32::MAX)),
            phrase_weight_max: f64::from(bound.weight.score(0, u32::MAX)),
            segment_weight,
            norm_ratio,
        }
    }

    /// The bound on the phrase's score in the current block of `blocks` (loaded); the
    /// phrase's full weight when tantivy has no usable figure for the block.
    fn of_block(&self, blocks: &mut BlockSegmentPostings, fieldnorms: &FieldNormReader) -> f64 {
        let unbounded = self.phrase_weight_max * (1.0 + BLOCK_BOUND_SLACK);
        let block_max = f64::from(blocks.block_max_score(fieldnorms, &self.segment_weight));
        if !(block_max > 0.0 && self.segment_weight_max > 0.0 && self.norm_ratio > 0.0) {
            return unbounded;
        }
        let tf_factor = (block_max / self.segment_weight_max).min(1.0);
        let bound = self.phrase_weight_max / (1.0 + self.norm_ratio * (1.0 / tf_factor - 1.0));
        (bound * (1.0 + BLOCK_BOUND_SLACK)).min(unbounded)
    }
}
