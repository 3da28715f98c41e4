//! Limits, in one place. Each says why it exists and what happens past it.

/// Size of one erasure block: the unit the PUT path cuts a body into before it is split into
/// shards. 1 MiB keeps per-request memory small while amortising per-block overhead
/// (hashing setup, one write per drive per block).
pub const BLOCK_SIZE: usize = 1 << 20;

/// Largest block size a stored record may name. Records are written with [`BLOCK_SIZE`]; a
/// larger value read from a drive (up to this) is accepted so the block size can grow in a later
/// release, past it the record is invalid (`DecodeError::Invalid`, healed as corrupt) rather than
/// making a reader allocate the value.
pub const BLOCK_SIZE_MAX: usize = 64 << 20;

/// Objects up to this size live inline in the metadata record on each drive: one metadata
/// write per drive and no shard file, so small PUTs cost no inode and no extra sync.
pub const INLINE_SIZE_MAX: u64 = 128 * 1024;

/// Erasure blocks a single PUT or GET keeps in flight (being read, coded, or written).
/// Bounds request memory to about `BLOCKS_IN_FLIGHT * BLOCK_SIZE * (1 + parity/data)`.
pub const BLOCKS_IN_FLIGHT: usize = 3;

/// Blocks at least this large have their MD5 computed on a thread of its own beside their
/// erasure coding; smaller ones in the same task (a second thread costs more than it saves).
pub const MD5_APART_MIN: usize = 256 * 1024;
/// A shard file's appends are staged in this many bytes and written to the drive without the
/// page cache, a stage at a time (see `strata_drive::fs::DirectFile`): per open shard file.
pub const DIRECT_WRITE_STAGE: usize = 256 * 1024;
/// The alignment of direct writes' memory, offsets and lengths: 4 KiB, what every drive takes.
pub const DIRECT_WRITE_ALIGN: usize = 4096;

/// Largest object a single PutObject may carry (AWS: 5 GiB). Past it: `EntityTooLarge`.
pub const PUT_OBJECT_SIZE_MAX: u64 = 5 * 1024 * 1024 * 1024;

/// Smallest part of a multipart upload, except the last (AWS: 5 MiB). Else: `EntityTooSmall`.
pub const PART_SIZE_MIN: u64 = 5 * 1024 * 1024;

/// Highest part number (AWS: 10,000). Past it: `InvalidArgument`.
pub const PART_NUMBER_MAX: u32 = 10_000;

/// Longest object key in bytes (AWS: 1,024). Past it: `KeyTooLongError`.
pub const OBJECT_KEY_LEN_MAX: usize = 1024;

/// Bucket names are 3 to 63 characters (AWS bucket naming rules). Else: `InvalidBucketName`.
pub const BUCKET_NAME_LEN_MIN: usize = 3;
/// See [`BUCKET_NAME_LEN_MIN`].
pub const BUCKET_NAME_LEN_MAX: usize = 63;

/// User metadata (`x-amz-meta-*` names and values) may total 2 KiB (AWS).
/// Past it: `MetadataTooLarge`.
pub const USER_METADATA_SIZE_MAX: usize = 2 * 1024;

/// Largest `max-keys` a listing returns in one page (AWS: 1,000); larger requests are capped.
pub const LIST_KEYS_MAX: usize = 1000;

/// Multipart uploads each drive returns per round of a ListMultipartUploads (or of the expiry
/// sweep): a page of 1,000 is gathered in rounds of this many, so the memory a listing holds
/// stays bounded however many uploads a client started (each round: at most this many records
/// per drive).
pub const UPLOADS_ROUND: usize = 1000;

/// Longest default retention of a bucket's object lock configuration, in days (100 years) or
/// in years; longer is `400 InvalidArgument`. It bounds how far a misconfigured default can put
/// versions out of anyone's reach (COMPLIANCE cannot be shortened afterwards).
pub const OBJECT_LOCK_DAYS_MAX: u32 = 36_500;
/// See [`OBJECT_LOCK_DAYS_MAX`].
pub const OBJECT_LOCK_YEARS_MAX: u32 = 100;

/// Keys one DeleteObjects request may name (AWS: 1,000). Past it: `MalformedXML`.
pub const DELETE_OBJECTS_KEYS_MAX: usize = 1000;

/// Tags per object (AWS: 10), and the length of a tag key and value in characters (128, 256).
/// Past them: `InvalidTag`.
pub const OBJECT_TAGS_MAX: usize = 10;
/// See [`OBJECT_TAGS_MAX`].
pub const TAG_KEY_LEN_MAX: usize = 128;
/// Grants in one access control list (AWS: 100), whether from `x-amz-grant-*` headers or an
/// AccessControlPolicy document. Past it: `MalformedACLError`.
pub const ACL_GRANTS_MAX: usize = 100;
/// Tags per bucket (AWS: 50). Past it: `InvalidTag`.
pub const BUCKET_TAGS_MAX: usize = 50;

/// Largest `max-buckets` of a ListBuckets page (AWS: 10,000); past it `InvalidArgument` (400).
pub const BUCKETS_PAGE_MAX: usize = 10_000;
/// See [`OBJECT_TAGS_MAX`].
pub const TAG_VALUE_LEN_MAX: usize = 256;

/// CORS rules per bucket (AWS: 100). Past it: `MalformedXML`.
pub const CORS_RULES_MAX: usize = 100;

/// Largest request body we parse as XML (bucket configuration, multi-delete).
/// Past it: `MalformedXML` (the AWS limit for these documents is far below).
pub const XML_BODY_SIZE_MAX: usize = 2 * 1024 * 1024;

/// Drives per erasure set (2 to 16). A pool whose drive count has no divisor in range is refused.
pub const SET_DRIVE_COUNT_MIN: usize = 2;
/// See [`SET_DRIVE_COUNT_MIN`].
pub const SET_DRIVE_COUNT_MAX: usize = 16;

/// Allowed difference between a request's signing time and ours (AWS: 15 minutes).
/// Past it: `RequestTimeTooSkewed`.
pub const CLOCK_SKEW_MAX_SECS: u64 = 15 * 60;

/// Longest validity of a presigned URL (AWS: 7 days). Past it: `AuthorizationQueryParametersError`
/// for SigV4's `X-Amz-Expires`; for SigV2's absolute `Expires`, more than this (plus
/// [`CLOCK_SKEW_MAX_SECS`] for the signer's clock) in the future: `AccessDenied` (403).
pub const PRESIGN_EXPIRES_MAX_SECS: u64 = 7 * 24 * 3600;

/// Largest header block we accept for a chunk in aws-chunked encoding (the hex size,
/// the signature extension and CRLF), and for one trailing header line. Past it: `InvalidRequest`.
pub const CHUNK_HEADER_LEN_MAX: usize = 4096;

/// Trailing headers one aws-chunked body may carry (SDKs send one checksum and, when signed, the
/// trailer signature). Past it: `InvalidRequest`, so a client cannot grow a request's memory
/// with endless trailers.
pub const CHUNK_TRAILERS_MAX: usize = 8;

/// Metadata changes one drive commits in one transaction (group commit). A batch never waits
/// to fill: it takes what is pending, up to this many, so one sync serves them all.
pub const GROUP_COMMIT_BATCH_MAX: usize = 256;

/// How long a drive's metadata writer waits for more changes before committing a batch, when
/// the batch before it held more than one (writers are many): one sync then serves more of them.
pub const GROUP_COMMIT_LINGER: std::time::Duration = std::time::Duration::from_micros(300);

/// Page cache of each drive's metadata index (redb). redb's own default is 1 GiB per database,
/// which on a 16-drive node could claim 16 GiB; hot metadata of a drive fits far below this.
pub const INDEX_CACHE_SIZE: usize = 64 * 1024 * 1024;

/// A drive's index is checkpointed (a durable commit of its B-tree, after which its commit log
/// starts again) at least this often while changes arrive, and when idle this long after one:
/// a start replays at most this much of the log.
pub const INDEX_CHECKPOINT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);

/// A drive's index is checkpointed when its commit log passes this size.
pub const INDEX_LOG_SIZE_MAX: u64 = 64 * 1024 * 1024;

/// The largest frame a commit log may hold: a batch of [`GROUP_COMMIT_BATCH_MAX`] changes with
/// inline data of [`INLINE_SIZE_MAX`] each is well below it. A batch that encodes larger fails.
pub const INDEX_LOG_FRAME_MAX: usize = 256 * 1024 * 1024;

/// Pending metadata changes queued per drive before writers wait (back-pressure).
pub const DRIVE_COMMIT_QUEUE_DEPTH: usize = 1024;

/// Longest the object layer waits for one drive operation (a record read, a frame written or
/// read, a commit) before it counts that drive as failed for the request (`DriveError::TimedOut`,
/// so the quorum rules decide: the request succeeds on the other drives or fails with a quorum
/// error, never hangs). Longer than the node RPC time-out (15 s), so a remote drive's own
/// time-out answers first; far longer than a sync of a group commit under load.
pub const DRIVE_OP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// How long a drive remembers an operation that was ended (kept or undone) before its change
/// arrived, to refuse the change if it comes later still: twenty times the longest a caller
/// waits for a drive ([`DRIVE_OP_TIMEOUT`]), so a change delayed past its caller's time-out
/// (a slow device, a network that held it) cannot come back as a write that failed.
pub const ENDED_OP_MEMORY: std::time::Duration = std::time::Duration::from_secs(600);

/// At most this many such operations are remembered per drive (about 3 MiB); the oldest are
/// forgotten first. They are only the operations some drive failed to answer, so far fewer in
/// practice.
pub const ENDED_OPS_MAX: usize = 65_536;

/// How long a drive keeps a change pending for its operation's end before it takes the writer
/// for gone (a node that died between its commit and the end, an end lost on the way) and
/// settles the change as a restart would: the change stays, what it displaced is left to the
/// orphan sweep, and reads of the object no longer wait for an end that will not come. As long
/// as [`ENDED_OP_MEMORY`]: a writer still alive ends its operation within two drive time-outs.
/// Looked for at most every tenth of this.
pub const PENDING_OP_MAX: std::time::Duration = ENDED_OP_MEMORY;

/// Concurrent S3 requests served before new ones get `503 SlowDown`. A request counts until its
/// response body has been sent in full (a GET streaming to a slow reader still holds its slot
/// and its buffers).
pub const REQUESTS_IN_FLIGHT_MAX: usize = 1024;

/// Open client connections (`STRATA_CONNECTIONS_MAX`). Each costs a task, buffers and a file
/// descriptor even while idle, so without a cap a client could exhaust descriptors or memory by
/// opening connections. Past it a new connection is answered `503 SlowDown` (plain HTTP) or
/// closed at once (TLS) without being read.
pub const CONNECTIONS_MAX: usize = 4096;

/// Connections the kernel queues for the accept loop (the `listen` backlog; the kernel caps it at
/// `net.core.somaxconn`). Past it, new connection attempts are dropped and clients retry after a
/// second, so a burst of connections is served late instead of queued.
pub const LISTEN_BACKLOG: u32 = 4096;

/// Time a client has to send a complete request head (`STRATA_HEADER_READ_TIMEOUT`), counted
/// from when the connection is ready for its next request, so it also closes HTTP/1 keep-alive
/// connections left idle this long. Without it, a client that sends half a header holds its
/// connection forever. Past it the connection is closed.
pub const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A connection on which no byte moves either way for this long while no request is being
/// handled on it (`STRATA_IDLE_TIMEOUT`) is closed: a reader that stopped reading a response, a
/// half-sent HTTP/2 preface. Requests being handled are never cut by it, but a request body that
/// stalls this long is answered `RequestTimeout` (400). HTTP/2 connections are
/// pinged every half of it, so a healthy idle peer stays connected and a dead one is dropped.
pub const IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The slowest request body accepted (`STRATA_MIN_TRANSFER_RATE`, bytes per second; `0`: no
/// floor), measured over [`MIN_TRANSFER_WINDOW`] of waiting for the client: a body that moves
/// fewer than rate × window bytes in such a window is answered `RequestTimeout` (400) and its
/// connection closed. A client sending a few bytes every few seconds keeps the idle and stall
/// time-outs from ever firing, and holds its request's memory reservation for as long as it
/// likes: this is the rule that ends it. Time the server spends on its own work (writing shards)
/// does not count, so only the client's pace is judged. 512 B/s leaves room for ten parallel
/// uploads on a 56 kbit/s link.
pub const MIN_TRANSFER_RATE: u64 = 512;

/// The window [`MIN_TRANSFER_RATE`] is measured over (`STRATA_MIN_TRANSFER_WINDOW`); the first
/// window is the grace a new body gets.
pub const MIN_TRANSFER_WINDOW: std::time::Duration = std::time::Duration::from_secs(30);

/// Concurrent streams (requests) one HTTP/2 connection may open (hyper's default, named here):
/// past it the peer must wait for a stream to end. Every stream is still an S3 request subject
/// to [`REQUESTS_IN_FLIGHT_MAX`] and the memory budget.
pub const HTTP2_STREAMS_MAX: u32 = 200;

/// Time an HTTP/2 peer has to answer a keep-alive ping before its connection is closed.
pub const HTTP2_PING_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// Request headers one request may carry (hyper's default for HTTP/1 is 100; the server checks
/// HTTP/2's). Past it the request is refused with `431 Request Header Fields Too Large` before it
/// reaches S3.
pub const REQUEST_HEADERS_MAX: usize = 100;

/// The size of one HTTP/2 request's headers, decoded (names, values and 32 bytes each, as HTTP/2
/// counts them), the path included. Far above what S3 needs (2 KiB of user metadata, a
/// presigned URL's query), far below what would let a client pin memory with one request.
/// Past it the stream is refused before it reaches S3, as HTTP/1's count is.
pub const HTTP2_HEADER_LIST_MAX: u32 = 64 << 10;

/// Ciphertext a TLS connection may hold before it writes to the socket (rustls' default is
/// 64 KiB): room for a whole block of a response body and its headers, so a block is sealed
/// into records in one pass and leaves in one `writev` (rustls writes up to 64 records, 1 MiB,
/// per call). With server and client pinned to a core each, a TLS GET of 1 MiB objects costs the
/// server ~0.81–0.84 ms of CPU per MiB with this buffer against ~0.87–1.00 with 256 KiB
/// (`docs/bench/2026-11-26-sse.md`, "The TLS send buffer"). The buffer fills only while a client
/// reads slower than the server sends, so the worst case is this much per open connection
/// ([`CONNECTIONS_MAX`]), of the order of the kernel's own send buffer for such a connection.
pub const TLS_SEND_BUFFER: usize = BLOCK_SIZE + 64 * 1024;

/// Share of the memory ceiling (`STRATA_MEMORY_MAX`) used when it is not set: of the smaller of
/// the machine's RAM and the cgroup's `memory.max`.
pub const MEMORY_MAX_DEFAULT_PERCENT: u64 = 75;

/// Share of the memory ceiling set aside for request buffers (the byte budget every request
/// reserves from before it is served); the rest is for the process itself (index caches,
/// runtime, allocator slack). A request that cannot reserve its buffers gets `503 SlowDown`,
/// and so does every new request while the process's resident memory is above the ceiling.
pub const REQUEST_MEMORY_PERCENT: u64 = 50;

/// Buffer memory every request reserves (headers, small bodies, XML answers).
pub const REQUEST_MEMORY_BASE: u64 = 64 * 1024;

/// Buffer memory a streaming request (GET of a large object, PUT, UploadPart, PostObject)
/// reserves: blocks in flight on the erasure path, the channel to the response, and hyper's
/// buffers. A copy reserves it twice (it reads and writes).
pub const REQUEST_MEMORY_STREAM: u64 = 2 * BLOCKS_IN_FLIGHT as u64 * BLOCK_SIZE as u64;

/// How often resident memory is sampled (from `/proc/self/statm`) for the memory ceiling.
pub const MEMORY_SAMPLE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// Shortest root secret we accept: a shorter one is refused at start.
pub const ROOT_SECRET_LEN_MIN: usize = 8;

/// Default time-out of one node RPC call (`STRATA_RPC_TIMEOUT` overrides it). A call that
/// overruns it fails as offline and marks the node offline until a probe answers.
pub const RPC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// A speedtest waits for each peer's share twice its duration and this much more (set-up,
/// clean-up, a slow node) before it reports that node as failed.
pub const SPEEDTEST_PEER_SLACK: std::time::Duration = std::time::Duration::from_secs(120);

/// Longest wait for a peer to take a notice that state it caches changed (bucket records, the
/// IAM state). A peer that does not answer in time reloads on its own periodic read.
pub const PEER_NOTICE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// How long after answering a stop or restart asked through the admin API the node begins it:
/// time for the answer to reach the client before the listener drains.
pub const SERVICE_ANSWER_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

/// Allowed difference between a node RPC request's signing time and the receiving node's clock.
/// Short, because it bounds how long a captured request stays worth replaying to a node that
/// forgot its sender (restart, eviction); nodes are expected to keep their clocks within a
/// second or so by NTP. Past it: 403 with the two times in the message.
pub const RPC_CLOCK_SKEW_MAX: std::time::Duration = std::time::Duration::from_secs(60);

/// Sequence numbers of one RPC sender remembered below the highest seen (the IPsec anti-replay
/// window). Concurrent HTTP/2 streams may arrive out of order by up to the number of calls in
/// flight to one node; this is far above that (1 KiB of bitmap per sender). A number older than
/// the window, or seen before: 403 "replayed".
pub const RPC_REPLAY_WINDOW: usize = 8192;

/// RPC senders whose replay windows a node keeps (a sender is one peer client of one process:
/// a few per peer and restart). Past it the least recently heard is forgotten (logged).
pub const RPC_REPLAY_SENDERS_MAX: usize = 1024;

/// Largest RPC request body read whole (drive calls, lock calls, batches, peer notices, admin).
/// The largest legitimate one is a CompleteMultipartUpload commit (a version with up to 10,000
/// parts, about 1 MiB) or a bucket record with CORS rules (up to 2 MiB of XML); inline data is at
/// most 128 KiB. Past it: 413, before the body is decoded.
pub const RPC_BODY_SIZE_MAX: usize = 16 * 1024 * 1024;

/// Most drive calls one `drive/calls` request carries: the calls a request makes to the drives of
/// one node at the same moment (a GET's record reads, a PUT's commits) travel together, at most
/// this many; past it the caller starts another request, and a node refuses a longer batch (400).
pub const RPC_BATCH_CALLS_MAX: usize = 64;

/// Largest drive call that goes out in a batch with others ([`RPC_BATCH_CALLS_MAX`]); a larger
/// one (a multipart version with many parts, a format or heal state) travels alone, so a batch
/// stays below [`RPC_BODY_SIZE_MAX`] (64 × 144 KiB = 9 MiB at most).
pub const RPC_BATCH_CALL_SIZE_MAX: usize = 128 * 1024 + 16 * 1024;

/// Largest RPC answer a node reads whole (drive call replies, admin answers). The largest
/// legitimate one is a drive listing page: up to 1,000 whole object records, each with its
/// versions and part lists. Past it: the call fails as offline ("answer too large").
pub const RPC_ANSWER_SIZE_MAX: usize = 256 * 1024 * 1024;

/// Largest shard in one frame of a streamed shard write: one erasure block's shard (at most the
/// whole block, with one data shard) plus headroom. A larger declared frame: 400, and the temp
/// file is aborted.
pub const RPC_FRAME_SIZE_MAX: usize = BLOCK_SIZE + 64 * 1024;

/// Largest byte range one `drive/read` call may ask for: reads fetch one frame (bitrot hash and
/// shard). Past it: 400 on the serving node.
pub const RPC_READ_SIZE_MAX: usize = RPC_FRAME_SIZE_MAX + 32;

/// Lease of a distributed namespace lock, as a multiple of the RPC time-out. The holder refreshes
/// every third of it and may commit only while at least one RPC time-out of its lease remains
/// (a commit is RPC calls bounded by that time-out), so the lease must be longer than the
/// time-out; twice leaves two thirds of it between refreshes. With the default time-out: 30 s.
pub const LOCK_LEASE_PER_RPC_TIMEOUT: u32 = 2;

/// Longest wait for a namespace lock others hold, at least: longer than a lease, so a waiter
/// outlasts a holder that died. Past it: 503 SlowDown (`ObjectError::LockNotHeld`).
pub const LOCK_WAIT_MIN: std::time::Duration = std::time::Duration::from_secs(30);

/// Largest bucket policy, in bytes: AWS's documented limit (20 KB), so a policy accepted here
/// is accepted by AWS and the other way round. Past it: `MalformedPolicy` ("Policies must be
/// less than 20 KB" in AWS's wording).
pub const BUCKET_POLICY_SIZE_MAX: usize = 20 * 1024;

/// Largest identity policy (user, group, named, session or service-account policy), counted
/// without white space as IAM counts it: 6,144 characters, AWS's limit for a managed policy.
/// A larger one would be refused by every AWS tool a policy is written with, and keeping them
/// small keeps the per-request cost of evaluating a user's policies low. Past it:
/// `MalformedPolicyDocument` (the IAM error of `PolicyError`).
pub const IDENTITY_POLICY_SIZE_MAX: usize = 6 * 1024;

/// Longest IAM access key, user, group or policy name: IAM's limit for names (128). Past it:
/// `IamError::InvalidName` / `InvalidAccessKey`.
pub const IAM_NAME_LEN_MAX: usize = 128;
/// Shortest access key: three characters, as MinIO accepts (`strata admin user add abc ...`).
pub const IAM_ACCESS_KEY_LEN_MIN: usize = 3;
/// Secret keys: at least 8 characters (no guessable one-word secrets), at most 128. Else:
/// `IamError::InvalidSecret`.
pub const IAM_SECRET_LEN_MIN: usize = 8;
/// See [`IAM_SECRET_LEN_MIN`].
pub const IAM_SECRET_LEN_MAX: usize = 128;
/// Policies attached to one user or group: IAM's default quota (10) doubled, so a role mapped
/// from MinIO's unlimited lists still fits while a user's evaluation stays bounded. Past it:
/// `IamError::TooManyPolicies`.
pub const ATTACHED_POLICIES_MAX: usize = 20;

/// Largest stored IAM state (users, groups, policies, keys; sealed): 64 MiB holds ten thousand
/// users with their policies at the identity-policy limit. A change that would make it larger
/// is refused (`LimitExceeded`); a stored state larger than this is not read.
pub const IAM_STATE_SIZE_MAX: u64 = 64 * 1024 * 1024;

/// How often each node of a deployment reads the IAM state again, for a change whose notice
/// it missed (it was unreachable when another node made it). A notice itself takes effect at
/// once.
pub const IAM_RELOAD_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

/// Attempts of one IAM change when other nodes keep changing the state between its read and its
/// conditional write. Past them: `503 SlowDown`.
pub const IAM_CHANGE_ATTEMPTS: usize = 8;

/// After a lost race (another node stored the IAM state or the KMS key ring between this
/// change's read and its write), the change waits a random time up to this, doubled after
/// each loss up to [`STATE_CHANGE_BACKOFF_MAX`], before it reads again: two nodes changing at
/// once then stop meeting at the same instant, so neither loses every attempt.
pub const STATE_CHANGE_BACKOFF: std::time::Duration = std::time::Duration::from_millis(5);
/// See [`STATE_CHANGE_BACKOFF`].
pub const STATE_CHANGE_BACKOFF_MAX: std::time::Duration = std::time::Duration::from_millis(250);

/// Longest a service account may be given to live (IAM's longest key rotation advice: a year).
/// Past it: `InvalidArgument`.
pub const SERVICE_ACCOUNT_EXPIRY_MAX_SECS: u64 = 366 * 24 * 3600;

/// Largest admin API request body (a policy document with its white space, a user's secret, a
/// list of group members). Past it: `EntityTooLarge`.
pub const ADMIN_BODY_SIZE_MAX: usize = 256 * 1024;

/// Largest STS request body (form-encoded `AssumeRole` parameters with a session policy, which
/// is at most an identity policy's size, percent-encoded). Past it: `EntityTooLarge`.
pub const STS_BODY_SIZE_MAX: usize = 64 * 1024;

/// Temporary credentials' lifetime bounds and default (`DurationSeconds`): AWS's 15 minutes to
/// 12 hours, one hour when not given. Outside: `ValidationError`.
pub const STS_DURATION_MIN_SECS: u64 = 15 * 60;
/// See [`STS_DURATION_MIN_SECS`].
pub const STS_DURATION_MAX_SECS: u64 = 12 * 3600;
/// See [`STS_DURATION_MIN_SECS`].
pub const STS_DURATION_DEFAULT_SECS: u64 = 3600;

/// Notification configurations (Queue, Topic and CloudFunction entries together) one bucket may
/// hold. Past it: `InvalidArgument`.
pub const NOTIFICATION_RULES_MAX: usize = 100;

/// Longest prefix or suffix a listener filters keys by (AWS's limit on a filter rule value:
/// 1,024 bytes). Past it: `InvalidArgument`.
pub const NOTIFICATION_FILTER_VALUE_SIZE_MAX: usize = 1024;

/// Events the listen fan-out keeps for listeners behind the newest (one shared ring, each
/// event its finished JSON line of ~1 KiB). A listener that falls further behind loses the
/// oldest (counted in `strata_listen_events_dropped_total`); nothing ever waits for a listener.
pub const LISTEN_BUFFER_EVENTS: usize = 1024;

/// Events waiting to be written to one listener's connection. Past it new events are dropped
/// for that listener (counted), so a slow reader costs a bounded queue, never a slower PUT.
pub const LISTEN_CLIENT_QUEUE_EVENTS: usize = 256;

/// Buffer memory a listen request reserves from the request budget for its queue (its events
/// are ~1 KiB, at most ~5 KiB with a 1 KiB key escaped).
pub const LISTEN_CLIENT_MEMORY: u64 = 512 * 1024;

/// Listen streams one node serves at once (`mc watch`, ListenBucketNotification). Each holds a
/// request slot, a queue and a task; past it: `503 SlowDown`.
pub const LISTEN_CLIENTS_MAX: usize = 100;

/// Keep-alive of a listener that asked for no `ping`: a space this often (as MinIO sends it),
/// so proxies and clients see bytes moving and a listener that left is noticed soon.
pub const LISTEN_KEEPALIVE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);

/// How long a peer holds a listen poll open when it has no event to answer with. Shorter than
/// the RPC time-out a caller allows it on top.
pub const LISTEN_PEER_POLL_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Events one listen poll answers with at most (the rest wait for the next poll).
pub const LISTEN_PEER_BATCH_EVENTS: usize = 256;

/// A subscription of another node not polled for this long is dropped (that node stopped
/// listening, or died), so this node stops building events for it.
pub const LISTEN_PEER_IDLE_MAX: std::time::Duration = std::time::Duration::from_secs(30);

/// Other nodes' subscriptions one node keeps (one per node that has listeners). Past it a new
/// one is refused until an idle one is dropped.
pub const LISTEN_PEER_SUBSCRIPTIONS_MAX: usize = 256;

/// How long a new listener waits for the other nodes to subscribe it to their events before
/// its stream starts anyway (an unreachable node is subscribed to when it answers again).
pub const LISTEN_PEER_SUBSCRIBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Pause after a failed listen poll of a node, doubled after each failure up to
/// [`LISTEN_PEER_RETRY_MAX`].
pub const LISTEN_PEER_RETRY_MIN: std::time::Duration = std::time::Duration::from_millis(200);
/// See [`LISTEN_PEER_RETRY_MIN`].
pub const LISTEN_PEER_RETRY_MAX: std::time::Duration = std::time::Duration::from_secs(5);

/// At shutdown, how long the server waits for listen streams to end cleanly (their last chunk
/// written) before it exits.
pub const LISTEN_SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Undelivered events each notification target's queue holds. Past it new events for that
/// target are dropped (counted in `strata_notify_events_dropped_total`, logged) and the request
/// that caused them still succeeds, as AWS keeps serving writes when it cannot notify.
pub const NOTIFY_QUEUE_EVENTS_MAX: u64 = 100_000;

/// A queue segment file is closed and a new one started past this size; a segment is removed
/// once every event in it was delivered.
pub const NOTIFY_SEGMENT_SIZE_MAX: u64 = 4 * 1024 * 1024;

/// Largest event record stored (a key is at most 1 KiB; the record is about 1.5 KiB). A larger
/// one in a queue file is read as corruption and ends the readable part of that segment.
pub const NOTIFY_RECORD_SIZE_MAX: usize = 64 * 1024;

/// Retry delays of a delivery that failed: the first, doubled after each failure up to the
/// last.
pub const NOTIFY_RETRY_DELAY_MIN: std::time::Duration = std::time::Duration::from_millis(200);
/// See [`NOTIFY_RETRY_DELAY_MIN`].
pub const NOTIFY_RETRY_DELAY_MAX: std::time::Duration = std::time::Duration::from_secs(30);

/// Longest one delivery attempt (connect, send, answer) may take before it counts as failed.
pub const NOTIFY_SEND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Events waiting for the queue writer's next durable append, per target. Past it the request
/// waits (back-pressure), it does not grow memory.
pub const NOTIFY_APPEND_PENDING_MAX: usize = 1024;
/// Largest stored KMS key ring (named keys and their versions, sealed): 4 MiB holds tens of
/// thousands of key versions. A change past it is refused; a stored ring past it is not read.
pub const KMS_KEYRING_SIZE_MAX: u64 = 4 * 1024 * 1024;

/// Attempts of one KMS key ring change when other nodes keep changing it. Past them: `503`.
pub const KMS_CHANGE_ATTEMPTS: usize = 8;

/// How long a node uses its copy of the KMS key ring before reading it again (a key rotated on
/// another node is used for new objects here within this time; unknown keys and versions are
/// read again at once).
pub const KMS_RELOAD_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

/// Longest wait for one call to an external KMS (connect included). Past it the call fails as
/// unavailable: encrypted requests get `503 ServiceUnavailable` rather than hang.
pub const KMS_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Largest answer read from an external KMS (a key, a key list).
pub const KMS_ANSWER_SIZE_MAX: usize = 1024 * 1024;

/// How long a data key decrypted by the KMS is kept in memory for further reads of its object,
/// and how many are kept. Bounded, so a key removed from the KMS stops working within this time;
/// while the KMS is down, objects read within it still read.
pub const KMS_KEY_CACHE_TTL: std::time::Duration = std::time::Duration::from_secs(60);
/// See [`KMS_KEY_CACHE_TTL`].
pub const KMS_KEY_CACHE_ENTRIES_MAX: usize = 4096;

/// Lifecycle rules one bucket may hold (AWS: 1,000). Past it: `InvalidArgument`.
pub const LIFECYCLE_RULES_MAX: usize = 1000;
/// Longest lifecycle rule `ID` (AWS: 255 characters). Past it: `InvalidArgument`.
pub const LIFECYCLE_RULE_ID_LEN_MAX: usize = 255;
/// Versions one node's replication queue holds before it drops new ones (they stay PENDING, and
/// the drop is counted): ten million records of a few hundred bytes, a few GiB of one drive.
pub const REPLICATION_QUEUE_MAX: u64 = 10_000_000;
/// Versions one node copies at once for replication (of different keys; one key's go one after
/// another, in order).
pub const REPLICATION_COPIES_MAX: usize = 32;
/// Replication rules one bucket may hold (AWS: 1,000). Past it: `InvalidArgument`.
pub const REPLICATION_RULES_MAX: usize = 1000;
/// Longest replication rule `ID` (AWS: 255 characters). Past it: `InvalidArgument`.
pub const REPLICATION_RULE_ID_LEN_MAX: usize = 255;
/// Largest `NewerNoncurrentVersions` (AWS: 100). Past it: `InvalidArgument`.
pub const LIFECYCLE_NEWER_NONCURRENT_MAX: u32 = 100;
/// Versions one page of a lifecycle pass lists (the pass never holds more than a page, plus the
/// walk state of one key).
pub const LIFECYCLE_PAGE_SIZE: usize = 1000;
/// A lifecycle pass saves its position on the drives after this many keys, or after
/// [`LIFECYCLE_SAVE_INTERVAL`], whichever comes first: a restart redoes at most that much.
pub const LIFECYCLE_SAVE_KEYS: u64 = 1000;
/// See [`LIFECYCLE_SAVE_KEYS`].
pub const LIFECYCLE_SAVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);

// --- Forming a deployment and watching its drives (the binary) ---

/// Longest wait for a TCP connection to a peer node. Short: a node that does not accept within
/// it is down or unreachable, and the caller moves on (the probe brings it back).
pub const RPC_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);
/// While a deployment forms, a node checks again this often whether its peers answer, and
/// retries a format record that could not be written yet.
pub const FORMING_RETRY_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);
/// A node logs a refused node RPC request (a clock past the skew window, other credentials) at
/// most this often.
pub const REFUSAL_LOG_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);
/// While a deployment forms, the node says which peers it waits for at most this often.
pub const FORMING_LOG_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);
/// Longest a node keeps retrying a format record once formatting began: a new deployment whose
/// drives are partly formatted has no quorum, so the leader insists for this long, then stops
/// with the error.
pub const FORMAT_WRITE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);
/// How often the drive monitor checks each local drive (`STRATA_DRIVE_CHECK_INTERVAL`).
pub const DRIVE_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);
/// After a drive operation failed, the drive monitor looks at once, but at most this often
/// however many operations fail.
pub const DRIVE_TROUBLE_CHECK_DELAY: std::time::Duration = std::time::Duration::from_millis(200);
/// How long a sighting of a local drive's format record vouches for a record read. A metadata
/// lookup is a page-cache hit costing less than the `stat` that proves the drive is still there
/// (10 % of a GET 4 KiB's server CPU went to it), so reads share one `stat` per this interval;
/// writes still check every time, so nothing is acknowledged on a drive that has been wiped (a
/// wiped drive then fails as unreachable).
pub const DRIVE_ONLINE_RECHECK: std::time::Duration = std::time::Duration::from_millis(250);
/// How often the leader looks whether a node came back (and so a scan for what it missed is
/// due).
pub const RETURNED_NODE_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);
/// How often a node reads the bucket list again, for a change whose notice it missed.
pub const BUCKET_RELOAD_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);

// --- The listener (the front door) ---

/// After a failed `accept` (out of file descriptors, a reset), the listener pauses this long
/// instead of spinning.
pub const ACCEPT_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);
/// A connection past [`CONNECTIONS_MAX`] is sent its `503` for at most this long, off the
/// accept loop, then closed.
pub const OVER_CAPACITY_WRITE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);
/// HTTP/2 flow control of the S3 port and between nodes: a stream may have this much unread
/// (room for a shard stream between nodes; HTTP/2's default is 64 KiB)...
pub const HTTP2_STREAM_WINDOW: u32 = 4 << 20;
/// ... and a connection this much over all its streams.
pub const HTTP2_CONNECTION_WINDOW: u32 = 16 << 20;
/// Largest HTTP/2 DATA frame: a whole shard block in one frame, so it arrives as one buffer
/// and is not gathered from pieces.
pub const HTTP2_FRAME_SIZE_MAX: u32 = 1 << 20;

// --- Between nodes (RPC) ---

/// An RPC connection pings an idle peer this often, and counts it dead when a ping is not
/// answered within [`RPC_KEEPALIVE_TIMEOUT`].
pub const RPC_KEEPALIVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);
/// See [`RPC_KEEPALIVE_INTERVAL`].
pub const RPC_KEEPALIVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// A node marked offline is probed this often until it answers...
pub const NODE_PROBE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);
/// ... each probe waiting at most this long.
pub const NODE_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);
/// Releases (closed shard files, released locks) queued within this long go out in one request.
pub const RPC_BATCH_DELAY: std::time::Duration = std::time::Duration::from_millis(1);
/// Longest a shard write to another node waits for the peer to take a frame, or to answer at
/// the end; past it the write fails as timed out.
pub const SHARD_WRITE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// A shard file a peer keeps open for a reader that has not read it for this long is closed
/// (the reader died without closing it)...
pub const RPC_OPEN_IDLE_MAX: std::time::Duration = std::time::Duration::from_secs(60);
/// ... checked at most this often.
pub const RPC_OPEN_SWEEP_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);
/// Shards at least this large are hashed on a blocking thread when they arrive from a peer
/// (HighwayHash runs at ~11 GB/s: a 1 MiB shard takes ~0.1 ms); smaller ones inline.
pub const SHARD_HASH_INLINE_MAX: usize = 64 * 1024;
/// Lock timings are derived from the RPC time-out, but never from one shorter than this.
pub const LOCK_RPC_TIMEOUT_MIN: std::time::Duration = std::time::Duration::from_millis(100);

// --- Healing, scanning, lifecycle (the object layer) ---

/// Objects waiting in the heal queue at most; more are left to the scanner.
pub const HEAL_QUEUE_MAX: usize = 10_000;
/// A heal that failed for a reason that passes (a drive refusing a change while a stale
/// holder's lease on the object runs out, a lost quorum) is tried again this long after, then
/// after twice as long each time...
pub const HEAL_RETRY_FIRST: std::time::Duration = std::time::Duration::from_secs(1);
/// ... at most this many more times (1 + 2 + ... + 32 s: past the lock lease of the default
/// RPC time-out), after which the next scan finds the object.
pub const HEAL_RETRY_ATTEMPTS: u32 = 6;
/// How often the healer saves its queue and progress on the drives (when they changed).
pub const HEAL_STATE_SAVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);
/// Drives that keep a copy of a node's heal or lifecycle state.
pub const STATE_COPIES: usize = 3;
/// Keys a scan lists per page.
pub const SCAN_PAGE_SIZE: usize = 1000;
/// The least pause after each object a heal or scan worked on, at low priority...
pub const HEAL_PAUSE_LOW_MIN: std::time::Duration = std::time::Duration::from_millis(5);
/// ... and at normal priority (the rest of the pause follows the time the object took).
pub const HEAL_PAUSE_NORMAL_MIN: std::time::Duration = std::time::Duration::from_millis(1);
/// The least time between the starts of two background scans by default
/// (`STRATA_SCANNER_INTERVAL`): a scan that takes longer is followed at once by the next.
pub const SCANNER_INTERVAL: std::time::Duration = std::time::Duration::from_secs(3600);
/// Objects per second a background scan checks at most on each node by default
/// (`STRATA_SCANNER_SPEED`): its cost per second stays bounded however many objects there are
/// (a million objects take about 70 minutes a pass). Scans asked for (`heal start`, a drive's
/// return or replacement) are not held to it.
pub const SCANNER_SPEED: f64 = 250.0;
/// Keys a pool drain moves at once on its node: enough that their commits share the drives'
/// group commits (a move costs a few syncs), few enough to leave foreground requests the drives.
pub const DRAIN_PARALLEL: usize = 8;
/// How often a pool drain saves its progress (its heartbeat): a restart resumes from the last
/// save, moving at most this much again.
pub const DRAIN_SAVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);
/// How long a pool drain's worker may go without saving before another node takes the drain
/// over from its saved position (the worker's node was lost or stopped).
pub const DRAIN_WORKER_SILENT: std::time::Duration = std::time::Duration::from_secs(30);
/// How often every node looks for drains to follow or resume, and how long a drain waits before
/// another pass when the pool holds only uploads still open.
pub const DRAIN_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);
/// The least excess a pool must hold over its share for a rebalance to move keys off it (or 5 %
/// of the share, if more): below it, moving keys costs more than the evenness gained.
pub const REBALANCE_SLACK_MIN: u64 = 1 << 20;
/// How long a measure of each pool's free space is used to place new keys before the drives are
/// asked again: placement follows the fill within this, without a statfs per write.
pub const POOL_SPACE_TTL: std::time::Duration = std::time::Duration::from_secs(10);
/// The sizes at which a full scan's data usage splits each bucket's objects by size (current
/// versions): the bounds of MinIO's object size distribution, which its dashboards show
/// (`minio_bucket_objects_size_distribution`). Objects are counted in the range their size
/// falls in: below the first bound, between two, or at or past the last.
pub const USAGE_SIZE_BOUNDS: [u64; 9] =
    [1 << 10, 64 << 10, 256 << 10, 512 << 10, 1 << 20, 10 << 20, 64 << 20, 128 << 20, 512 << 20];
/// Buckets whose requests are counted one by one for the per-bucket metrics (MinIO's
/// `/minio/v2/metrics/bucket` shows 100): the first buckets requests name, while they exist.
/// Requests on further buckets count only in the totals; the slot of a deleted bucket is
/// freed at the next scrape.
pub const METRICS_BUCKETS_MAX: usize = 100;
/// Shard and temp files no record refers to are swept once older than this
/// (`STRATA_SCANNER_ORPHAN_AGE`): far longer than any write takes from its first frame to its
/// commit.
pub const SCANNER_ORPHAN_AGE: std::time::Duration = std::time::Duration::from_secs(3600);
/// The heal status asks each drive for its capacity, waiting at most this long (a hung drive
/// shows as not answering instead of holding the status).
pub const DRIVE_STATUS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);
/// How often lifecycle passes run by default (`STRATA_LIFECYCLE_INTERVAL`).
pub const LIFECYCLE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(6 * 3600);
/// A lifecycle day (`STRATA_LIFECYCLE_DAY_SECONDS` shortens it, for tests only).
pub const LIFECYCLE_DAY: std::time::Duration = std::time::Duration::from_secs(86_400);
/// Stripes of a node's object lock table (one for all its sets and pools): objects whose hashes
/// share a stripe share a lock.
pub const LOCK_STRIPES: usize = 1024;

// --- Parsing and the protocols around S3 ---

/// Longest expansion of one ellipsis pattern (`/mnt/disk{1...N}`). Past it: refused at start.
pub const ELLIPSIS_EXPANSION_MAX: usize = 1 << 16;
/// Largest field of a POST form (AWS: 20 KiB), and most fields one form may hold. Past them:
/// `MalformedPOSTRequest`.
pub const POST_FIELD_SIZE_MAX: usize = 20 * 1024;
/// See [`POST_FIELD_SIZE_MAX`].
pub const POST_FIELDS_MAX: usize = 100;
/// Longest subscription id a listen poll may name (a UUID is 36 characters).
pub const LISTEN_SUBSCRIPTION_ID_LEN_MAX: usize = 64;
/// Longest line a NATS server may send (an `INFO` or an error).
pub const NATS_LINE_SIZE_MAX: u64 = 64 * 1024;
/// An OpenID provider's keys are trusted this long before they are fetched again...
pub const JWKS_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(300);
/// ... fetched at most this often (a token naming an unknown key cannot make us hammer the
/// provider) ...
pub const JWKS_REFETCH_MIN: std::time::Duration = std::time::Duration::from_secs(5);
/// ... waiting at most this long, for a document of at most this size.
pub const JWKS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// See [`JWKS_TIMEOUT`].
pub const JWKS_SIZE_MAX: usize = 256 * 1024;
/// Clock skew allowed on an identity token's `nbf` (not before).
pub const OIDC_CLOCK_SKEW: std::time::Duration = std::time::Duration::from_secs(60);
/// Connections to an external service (the KMS; the bench's S3 endpoint) idle this long are
/// closed.
pub const HTTP_POOL_IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

// --- The memory budget ---

/// The memory ceiling when the machine's RAM cannot be read and no `STRATA_MEMORY_MAX` is set.
pub const MEMORY_MAX_FALLBACK: u64 = 4 << 30;
/// Smallest buffer kept for reuse, and how many are kept at most (see `buffers.rs`).
pub const BUFFER_REUSE_SIZE_MIN: usize = 64 * 1024;
/// See [`BUFFER_REUSE_SIZE_MIN`].
pub const BUFFERS_KEPT_MAX: usize = 48;

// --- The speedtest and the bench (tools) ---

/// A speedtest's objects unless `size` says otherwise.
pub const SPEEDTEST_SIZE_DEFAULT: u64 = 64 << 20;
/// A speedtest's phases last this long unless `duration` says otherwise...
pub const SPEEDTEST_DURATION_DEFAULT: std::time::Duration = std::time::Duration::from_secs(10);
/// ... at least this...
pub const SPEEDTEST_DURATION_MIN: std::time::Duration = std::time::Duration::from_millis(100);
/// ... and at most this. Past either: `InvalidArgument`.
pub const SPEEDTEST_DURATION_MAX: std::time::Duration = std::time::Duration::from_secs(600);
/// Shortest autotune round of a speedtest.
pub const SPEEDTEST_AUTOTUNE_STEP_MIN: std::time::Duration = std::time::Duration::from_millis(500);
/// The bench reports its progress this often.
pub const BENCH_REPORT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);
/// Longest a bench agent waits for the start time it was given (a clock far off is refused).
pub const BENCH_AGENT_WAIT_MAX: std::time::Duration = std::time::Duration::from_secs(60);
/// Largest command a bench agent reads.
pub const BENCH_AGENT_COMMAND_SIZE_MAX: usize = 64 * 1024;
/// `strata health` gives the server this long to answer its liveness check before calling it
/// unhealthy (a container runtime's own time-out is usually longer).
pub const HEALTH_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// After SIGTERM the server lets the requests in flight finish for at most this long, then cuts
/// the connections still open (systemd's stop time-out and Kubernetes' grace period are set
/// longer).
pub const SHUTDOWN_DRAIN_MAX: std::time::Duration = std::time::Duration::from_secs(60);

/// Largest MinIO `xl.meta` `strata import minio` reads: MinIO keeps objects of up to 128 KiB
/// inline in it, and a few thousand versions; a file past this is not one it wrote, and is
/// reported as malformed rather than read into memory.
pub const MINIO_XL_META_SIZE_MAX: u64 = 64 << 20;

/// Largest MinIO drive format record (`.minio.sys/format.json`) read: a few hundred bytes per
/// drive of its pool.
pub const MINIO_FORMAT_SIZE_MAX: u64 = 1 << 20;

/// Plain bytes decompressed at a time from an object MinIO compressed, when the import writes it
/// again (each piece is one write to the object layer).
pub const MINIO_DECOMPRESS_CHUNK: usize = 1 << 20;

/// A file in a MinIO drive's `.minio.sys/tmp` written this recently means a MinIO server is
/// running on the drive (it rewrites a probe file there every few seconds; it takes no lock):
/// `strata import minio` refuses such drives.
pub const MINIO_RUNNING_PROBE_AGE: std::time::Duration = std::time::Duration::from_secs(60);

/// The progress line of `strata import` is redrawn at most this often.
pub const IMPORT_PROGRESS_REDRAW: std::time::Duration = std::time::Duration::from_millis(500);

/// Objects `strata import minio` imports at a time: each waits for its drives' commits, so
/// enough of them in flight let the drives' group commits share their syncs.
pub const IMPORT_OBJECTS_IN_FLIGHT: usize = 32;

/// Request traces a live watcher (`mc admin trace`) may fall behind by before it loses the
/// oldest: bounded so a slow watcher never holds memory or slows requests.
pub const TRACE_QUEUE_ENTRIES: usize = 1024;

/// How often a trace stream with nothing to say sends a keep-alive (a space, as MinIO does).
pub const TRACE_KEEPALIVE: std::time::Duration = std::time::Duration::from_secs(1);

/// Warnings and errors a node keeps for `mc admin logs --last N` (MinIO keeps 10,000 console
/// lines; these are only warnings and errors, each a few hundred bytes).
pub const LOG_RECENT_ENTRIES: usize = 1000;

/// The web console's sessions: signed out after this long without a request (seconds)...
pub const CONSOLE_IDLE_SECS: u64 = 30 * 60;
/// ...and after this long in any case: the lifetime of the STS credentials a sign-in gets.
pub const CONSOLE_SESSION_SECS: u64 = 12 * 3600;
/// A session's last-seen time is written back into its cookie at most this often (seconds).
pub const CONSOLE_SEEN_REFRESH_SECS: u64 = 60;
/// The longest a sign-in through the identity provider may take, from the console sending the
/// browser there to its coming back (seconds).
pub const CONSOLE_OIDC_FLOW_SECS: u64 = 600;
/// Failed console sign-ins allowed per access key and client address within
/// [`CONSOLE_SIGNIN_WINDOW_SECS`]; past them the next are refused until the window has passed
/// (a guess costs a minute per few tries, and only the guesser's address is held up).
pub const CONSOLE_SIGNIN_FAILURES_MAX: u32 = 5;
pub const CONSOLE_SIGNIN_WINDOW_SECS: u64 = 60;
/// The (access key, address) pairs a node tracks failed sign-ins for; past it the stale ones
/// go first, then all.
pub const CONSOLE_SIGNIN_TRACKED_MAX: usize = 10_000;
/// The largest sign-in request the console reads.
pub const CONSOLE_SIGNIN_BODY_MAX: usize = 16 * 1024;
/// The memory (KiB) of the Argon2id pass that stretches the root credentials into the console's
/// session keys, once per process.
pub const CONSOLE_KEY_ARGON2_KIB: u32 = 64 * 1024;
/// The recent warnings and errors the console shows.
pub const CONSOLE_RECENT_LOGS: usize = 100;
/// The longest a console share link (a presigned GET) may last: S3's own limit, 7 days.
pub const CONSOLE_SHARE_SECS_MAX: u64 = 7 * 24 * 3600;
