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

use tantivy::postings::Postings;
use tantivy::query::{Bm25Weight, EnableScoring, Explanation, PhraseQuery, Query, Scorer, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, SeekDangerResult, SegmentReader, TERMINATED, Term};

/// A phrase of two or more words (`terms`, in order, all of `field`).
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
            } => Some(Bm25Weight::for_terms(statistics_provider, &self.terms)?),
            EnableScoring::Disabled { .. } => None,
        };
        Ok(Box::new(TopPhraseWeight {
            phrase: self.phrase.weight(enable_scoring)?,
            bound,
            field: self.field,
            terms: self.terms.clone(),
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
    bound: Option<Bm25Weight>,
    field: Field,
    terms: Vec<Term>,
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
    /// its positions when its bound does not beat the threshold.
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
        let fieldnorms = reader.get_fieldnorms_reader(self.field)?;
        let mut phrase = self.phrase.scorer(reader, 1.0)?;
        // Documents below `unchecked_from` are known not to hold the phrase (the scorer sits
        // on its first match at the start; after a seek it says where to look next).
        let mut unchecked_from = phrase.doc();
        let mut threshold = threshold;
        let mut candidate = postings[0].doc();
        while candidate != TERMINATED && unchecked_from != TERMINATED {
            let mut behind = None;
            for posting in &mut postings {
                let at = if posting.doc() < candidate {
                    posting.seek(candidate)
                } else {
                    posting.doc()
                };
                if at > candidate {
                    behind = Some(at);
                    break;
                }
            }
            if let Some(next) = behind {
                candidate = next;
                continue;
            }
            if candidate >= unchecked_from {
                let rarest = postings
                    .iter()
                    .map(|posting| posting.term_freq())
                    .min()
                    .unwrap_or(0);
                if bound.score(fieldnorms.fieldnorm_id(candidate), rarest) > threshold {
                    match phrase.seek_danger(candidate) {
                        SeekDangerResult::Found => {
                            let score = phrase.score();
                            if score > threshold {
                                threshold = callback(candidate, score);
                            }
                            unchecked_from = candidate + 1;
                        }
                        SeekDangerResult::SeekLowerBound(next) => unchecked_from = next,
                    }
                }
            }
            candidate = postings[0].advance();
        }
        Ok(())
    }
}
