//! A small tonic greeter on loopback that fails on purpose, and its client calls: the
//! messages and the service glue written by hand (what tonic's codegen writes), no protoc.
//!
//! The server answers each `SayHello` (and `SayHelloToAll`) with the next [`Answer`] of its
//! script (the last one again once the script runs out), and records every call it gets.
//! `StreamHellos` commits the call (headers and one message) and then fails in its trailers.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use http::uri::PathAndQuery;
use tonic::body::Body;
use tonic::client::GrpcService;
use tonic::{Code, Request, Response, Status};
use tonic_prost::ProstCodec;

/// The request message.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HelloRequest {
    /// Who to greet.
    #[prost(string, tag = "1")]
    pub name: String,
}

/// The response message.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HelloReply {
    /// The greeting.
    #[prost(string, tag = "1")]
    pub message: String,
}

/// The service's name, as its paths carry it.
pub const SERVICE: &str = "helloworld.Greeter";

/// What the server answers to one call.
#[derive(Clone, Debug)]
pub enum Answer {
    /// `OK`, with a greeting.
    Hello,
    /// A Trailers-Only answer with this code, and these `grpc-retry-pushback-ms` values.
    Fail(Code, &'static [&'static str]),
    /// `OK` after this long.
    Slow(Duration),
}

/// One call as the server got it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// The method's path.
    pub path: String,
    /// The request's `grpc-previous-rpc-attempts`, if it had one.
    pub previous_attempts: Option<String>,
    /// The request's names (one for a unary call, every message's for a client stream).
    pub names: Vec<String>,
    /// The request's `grpc-timeout`, read as a duration, if it had one.
    pub timeout: Option<Duration>,
}

#[derive(Default)]
struct Script {
    answers: Mutex<VecDeque<Answer>>,
    calls: Mutex<Vec<Call>>,
}

impl Script {
    fn next(&self) -> Answer {
        let mut answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        if answers.len() > 1 {
            answers.pop_front().unwrap_or(Answer::Hello)
        } else {
            answers.front().cloned().unwrap_or(Answer::Hello)
        }
    }

    fn record(&self, path: &str, headers: &http::HeaderMap, names: Vec<String>) {
        let previous_attempts = headers
            .get("grpc-previous-rpc-attempts")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let timeout = headers
            .get("grpc-timeout")
            .and_then(|v| backstop::grpc::parse_timeout(v.as_bytes()));
        let call = Call {
            path: path.to_owned(),
            previous_attempts,
            names,
            timeout,
        };
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(call);
    }
}

/// A greeter serving on 127.0.0.1 on the current tokio runtime, until it is dropped.
pub struct Greeter {
    addr: SocketAddr,
    script: Arc<Script>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Greeter {
    /// Starts a greeter that answers with `answers`, in order (the last one again after).
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub async fn start(answers: impl IntoIterator<Item = Answer>) -> Greeter {
        let script = Arc::new(Script::default());
        script
            .answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(answers);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("a bound address");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let service = GreeterServer(script.clone());
        tokio::spawn(async move {
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
            let _ = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stopped.await;
                })
                .await;
        });
        Greeter {
            addr,
            script,
            stop: Some(stop),
        }
    }

    /// The greeter's URL (`http://127.0.0.1:port`).
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A tonic channel to the greeter, connected lazily.
    ///
    /// # Panics
    /// Never for the greeter's own URL.
    #[must_use]
    pub fn channel(&self) -> tonic::transport::Channel {
        tonic::transport::Endpoint::from_shared(self.url())
            .expect("a valid URL")
            .connect_lazy()
    }

    /// Every call the greeter got, in order.
    #[must_use]
    pub fn calls(&self) -> Vec<Call> {
        self.script
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for Greeter {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A tonic client over `channel`, once the channel is ready.
async fn ready<T>(channel: T) -> Result<tonic::client::Grpc<T>, Status>
where
    T: GrpcService<Body>,
    T::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|e| Status::unknown(e.into().to_string()))?;
    Ok(grpc)
}

/// `SayHello(name)` through `channel`.
///
/// # Errors
/// The call's status when it fails.
pub async fn say_hello<T>(
    channel: T,
    request: Request<HelloRequest>,
) -> Result<Response<HelloReply>, Status>
where
    T: GrpcService<Body>,
    T::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    T::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut grpc = ready(channel).await?;
    let path = PathAndQuery::from_static("/helloworld.Greeter/SayHello");
    grpc.unary(request, path, ProstCodec::default()).await
}

/// `SayHelloToAll(names...)` (client streaming) through `channel`.
///
/// # Errors
/// The call's status when it fails.
pub async fn say_hello_to_all<T>(
    channel: T,
    names: Vec<String>,
) -> Result<Response<HelloReply>, Status>
where
    T: GrpcService<Body>,
    T::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    T::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut grpc = ready(channel).await?;
    let path = PathAndQuery::from_static("/helloworld.Greeter/SayHelloToAll");
    let stream = futures_lite::stream::iter(names.into_iter().map(|name| HelloRequest { name }));
    grpc.client_streaming(Request::new(stream), path, ProstCodec::default())
        .await
}

/// `StreamHellos(name)` (server streaming) through `channel`: the messages the caller read
/// and the status the stream ended with.
///
/// # Errors
/// The call's status when it fails before its stream.
pub async fn stream_hellos<T>(channel: T, name: &str) -> Result<(Vec<String>, Status), Status>
where
    T: GrpcService<Body>,
    T::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    T::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut grpc = ready(channel).await?;
    let path = PathAndQuery::from_static("/helloworld.Greeter/StreamHellos");
    let request = Request::new(HelloRequest {
        name: name.to_owned(),
    });
    let mut stream = grpc
        .server_streaming::<_, HelloReply, _>(request, path, ProstCodec::default())
        .await?
        .into_inner();
    let mut read = Vec::new();
    for _ in 0..100 {
        match stream.message().await {
            Ok(Some(reply)) => read.push(reply.message),
            Ok(None) => return Ok((read, Status::ok(""))),
            Err(status) => return Ok((read, status)),
        }
    }
    Err(Status::internal("more than 100 messages"))
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The server's glue: what `tonic-build` writes for a service.
#[derive(Clone)]
struct GreeterServer(Arc<Script>);

impl tonic::server::NamedService for GreeterServer {
    const NAME: &'static str = SERVICE;
}

impl<B> tower::Service<http::Request<B>> for GreeterServer
where
    B: http_body::Body + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let script = self.0.clone();
        Box::pin(async move {
            let mut grpc =
                tonic::server::Grpc::new(ProstCodec::<HelloReply, HelloRequest>::default());
            let response = match request.uri().path() {
                "/helloworld.Greeter/SayHello" => grpc.unary(Unary(script), request).await,
                "/helloworld.Greeter/SayHelloToAll" => {
                    grpc.client_streaming(ClientStream(script), request).await
                }
                "/helloworld.Greeter/StreamHellos" => {
                    grpc.server_streaming(ServerStream(script), request).await
                }
                _ => Status::unimplemented("no such method").into_http(),
            };
            Ok(response)
        })
    }
}

/// The answer `answer` makes for `names`.
async fn answered(answer: Answer, names: &[String]) -> Result<Response<HelloReply>, Status> {
    match answer {
        Answer::Hello => {}
        Answer::Slow(d) => tokio::time::sleep(d).await,
        Answer::Fail(code, pushback) => {
            let mut status = Status::new(code, "failing on purpose");
            for value in pushback {
                if let Ok(v) = value.parse() {
                    status.metadata_mut().append("grpc-retry-pushback-ms", v);
                }
            }
            return Err(status);
        }
    }
    Ok(Response::new(HelloReply {
        message: format!("hello {}", names.join(" and ")),
    }))
}

struct Unary(Arc<Script>);

impl tonic::server::UnaryService<HelloRequest> for Unary {
    type Response = HelloReply;
    type Future = BoxFuture<Result<Response<HelloReply>, Status>>;

    fn call(&mut self, request: Request<HelloRequest>) -> Self::Future {
        let script = self.0.clone();
        let names = vec![request.get_ref().name.clone()];
        script.record(
            "/helloworld.Greeter/SayHello",
            request.metadata().as_ref(),
            names.clone(),
        );
        let answer = script.next();
        Box::pin(async move { answered(answer, &names).await })
    }
}

struct ClientStream(Arc<Script>);

impl tonic::server::ClientStreamingService<HelloRequest> for ClientStream {
    type Response = HelloReply;
    type Future = BoxFuture<Result<Response<HelloReply>, Status>>;

    fn call(&mut self, request: Request<tonic::Streaming<HelloRequest>>) -> Self::Future {
        let script = self.0.clone();
        Box::pin(async move {
            let headers = request.metadata().clone().into_headers();
            let mut stream = request.into_inner();
            let mut names = Vec::new();
            while let Some(message) = stream.message().await? {
                names.push(message.name);
            }
            script.record("/helloworld.Greeter/SayHelloToAll", &headers, names.clone());
            let answer = script.next();
            answered(answer, &names).await
        })
    }
}

struct ServerStream(Arc<Script>);

type Hellos = Pin<Box<dyn futures_lite::Stream<Item = Result<HelloReply, Status>> + Send>>;

impl tonic::server::ServerStreamingService<HelloRequest> for ServerStream {
    type Response = HelloReply;
    type ResponseStream = Hellos;
    type Future = BoxFuture<Result<Response<Hellos>, Status>>;

    fn call(&mut self, request: Request<HelloRequest>) -> Self::Future {
        let name = request.get_ref().name.clone();
        self.0.record(
            "/helloworld.Greeter/StreamHellos",
            request.metadata().as_ref(),
            vec![name.clone()],
        );
        // Committed: the headers and a first message go out, then the call fails.
        let messages: Hellos = Box::pin(futures_lite::stream::iter([
            Ok(HelloReply {
                message: format!("hello {name}"),
            }),
            Err(Status::unavailable("failing after commitment")),
        ]));
        Box::pin(async move { Ok(Response::new(messages)) })
    }
}

/// An A6 `retryPolicy` of `max_attempts` with a fixed `backoff` (initial = max, multiplier 1),
/// retrying `codes`: what the scenarios retry by.
///
/// # Panics
/// If A6 refuses it (fewer than 2 attempts, a zero backoff, no code).
#[must_use]
pub fn fixed_a6(
    max_attempts: u32,
    backoff: Duration,
    codes: &[backstop::grpc::Code],
) -> backstop::grpc::RetryPolicy {
    backstop::grpc::RetryPolicy::builder()
        .max_attempts(max_attempts)
        .initial_backoff(backoff)
        .max_backoff(backoff)
        .backoff_multiplier(1.0)
        .retryable_status_codes(codes)
        .build()
        .expect("a valid A6 policy")
}

/// A current-thread tokio runtime with its I/O and timers, for one scenario.
///
/// # Panics
/// When the operating system refuses tokio its I/O driver.
#[must_use]
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Why the last operation of `events` ended, if one did.
#[must_use]
pub fn stop_reason(events: &[backstop::EventKind]) -> Option<backstop::StopReason> {
    events.iter().rev().find_map(|e| match e {
        backstop::EventKind::Finished { outcome, .. } => Some(outcome.reason),
        _ => None,
    })
}

/// The waits of `events`: each decided delay and what decided it.
#[must_use]
pub fn waits(events: &[backstop::EventKind]) -> Vec<(Duration, backstop::machine::DelaySource)> {
    events
        .iter()
        .filter_map(|e| match e {
            backstop::EventKind::WaitStarted { delay, source, .. } => Some((*delay, *source)),
            _ => None,
        })
        .collect()
}
