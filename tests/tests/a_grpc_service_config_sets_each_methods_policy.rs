//! A service config (grpc-go's example spelling, `"MaxAttempts"`) through a tonic channel: the
//! method it names is retried by its policy, a method it does not name is sent once.

use backstop::grpc::{RetryLayer, ServiceConfig};
use backstop::tokio::TokioRuntime;
use backstop_tests::greeter::{
    runtime, say_hello, say_hello_to_all, Answer, Greeter, HelloRequest,
};
use tower::ServiceBuilder;

const CONFIG: &str = r#"{
  "methodConfig": [{
    "name": [{"service": "helloworld.Greeter", "method": "SayHello"}],
    "retryPolicy": {
      "MaxAttempts": 4,
      "InitialBackoff": ".01s",
      "MaxBackoff": ".01s",
      "BackoffMultiplier": 1.0,
      "RetryableStatusCodes": ["UNAVAILABLE"]
    }
  }],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.5}
}"#;

#[test]
fn the_named_method_is_retried_and_the_other_sent_once() {
    runtime().block_on(async {
        let config = ServiceConfig::from_json(CONFIG).expect("a valid service config");
        let greeter = Greeter::start([
            Answer::Fail(tonic::Code::Unavailable, &[]),
            Answer::Hello,
            Answer::Fail(tonic::Code::Unavailable, &[]),
        ])
        .await;
        let layer = RetryLayer::from_service_config(config, TokioRuntime::new());
        let channel = ServiceBuilder::new()
            .layer(layer)
            .service(greeter.channel());

        let request = tonic::Request::new(HelloRequest { name: "ada".into() });
        let reply = say_hello(channel.clone(), request)
            .await
            .expect("OK on the retry");
        assert_eq!(reply.get_ref().message, "hello ada");
        assert_eq!(greeter.calls().len(), 2);

        let status = say_hello_to_all(channel, vec!["lin".into()])
            .await
            .expect_err("UNAVAILABLE, not retried");
        assert_eq!(status.code(), tonic::Code::Unavailable);
        assert_eq!(greeter.calls().len(), 3);
    });
}
