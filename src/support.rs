//! Small helpers the client and the backend share.

use std::future::Future;
use std::pin::Pin;

/// A future that may be sent between tasks.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
